// Each uploaded file's state, for the upload list and the documents tab: queued (uploaded, waiting for a build
// or ingest), parsing (with its pages, chunks and how many are embedded), ready, or failed with its reason. A
// running build's job events say it as they come (and the build's time left, `eta_s`, computed by the server);
// the catalog says it otherwise. While a job runs, its files' cells are redrawn every TICK_MS with the time
// their state has lasted, so a long parse (an OCR'd scan) is seen to go on.
import {t} from "./i18n.js";
import {esc, fetchOk, sseEvents} from "./common.js";

const jobs = new Map();  // kb -> {id, running, eta, files: Map(name -> {state, pages, chunks, embedded, reason})}
const listeners = new Set();
const FAILED = new Set(["failed", "unsupported", "empty", "too_large"]);
const stored = (kb) => `lore.job.${kb}`;
export const TICK_MS = 1000;
let ticker = null;

// Calls fn(kb, ended) whenever a followed job of knowledge base `kb` moves (ended: it has just finished).
export const onProgress = (fn) => listeners.add(fn);
const changed = (kb, ended = false) => listeners.forEach((fn) => fn(kb, ended));
export const inFlight = (kb) => Boolean(jobs.get(kb)?.running);
// The id of the build of `kb` running now (an ingest has none), else null.
export const runningJob = (kb) => (jobs.get(kb)?.running && jobs.get(kb).id) || null;

// A build or ingest of `kb` has started (`id`: its job, kept for this tab so a reload follows it again;
// `waiting`: the state of its files it has not reported on yet).
export function startJob(kb, id, waiting = "queued") {
  jobs.set(kb, {id, running: true, files: new Map(), current: null, reading: null, waiting, eta: null, since: Date.now()});
  if (id) sessionStorage.setItem(stored(kb), id);
  ticker ??= setInterval(tick, TICK_MS);
  changed(kb);
}

// Redraws, in place, the state cells of the files of the jobs running (their time advances); stops when none runs.
function tick() {
  const running = [...jobs].filter(([, job]) => job.running).map(([kb]) => kb);
  if (!running.length) { clearInterval(ticker); ticker = null; return; }
  document.querySelectorAll(".file-status[data-kb]").forEach((cell) => {
    if (running.includes(cell.dataset.kb)) cell.innerHTML = stateInner(fileState(cell.dataset.kb, cell.dataset.file));
  });
}

// One event of the job's stream (`status` per file, then `end` or `error`).
export function jobEvent(kb, ev) {
  const job = jobs.get(kb);
  if (!job) return;
  const d = ev.data || {};
  if (ev.event === "status" && d.stage === "reading") {  // loading (and OCR) has begun: no counts yet
    job.files.set(d.file, {state: "parsing", since: Date.now()});
    job.reading = d.file;  // read ahead in a thread: the file embedded now may still be another
  } else if (ev.event === "status" && d.stage === "file") {  // read and chunked: now embedded
    const since = job.files.get(d.file)?.since ?? Date.now();
    job.files.set(d.file, {state: "parsing", pages: d.pages, chunks: d.chunks, embedded: 0, since});
    job.current = d.file;
    if (job.reading === d.file) job.reading = null;
  } else if (ev.event === "status" && d.stage === "embedded" && job.files.has(job.current)) {
    job.files.get(job.current).embedded = d.chunks;
    job.eta = d.eta_s ?? null;
  } else if (ev.event === "status" && d.stage === "file_done") {
    job.files.set(d.file, {state: FAILED.has(d.status) ? "failed" : "ready", chunks: d.chunks, reason: d.error});
    job.eta = d.eta_s ?? null;
    if (job.current === d.file) job.current = null;
    if (job.reading === d.file) job.reading = null;
  } else if (ev.event === "end" || ev.event === "error") return endJob(kb, ev.event === "end" ? ev.data : null);
  changed(kb);
}

// The job is over: with an ingest's report (`result.files`) the files it reached get their outcome.
export function endJob(kb, result = null) {
  const job = jobs.get(kb);
  if (!job || !job.running) return;
  for (const f of result?.files || []) {
    job.files.set(f.name, {state: FAILED.has(f.status) ? "failed" : "ready", chunks: f.chunks, reason: f.error});
  }
  job.running = false;
  sessionStorage.removeItem(stored(kb));
  changed(kb, true);
}

// Follows a build this tab started before a reload (its events replay from the start), once.
export async function resume(kb) {
  const id = sessionStorage.getItem(stored(kb));
  if (!id || jobs.has(kb)) return;
  await follow(kb, id);
}

// Follows job `id` of `kb` to its end (its events from the start); returns its last event.
export async function follow(kb, id) {
  startJob(kb, id);
  let last = null;
  try {
    const r = await fetchOk(`/api/kbs/${encodeURIComponent(kb)}/jobs/${encodeURIComponent(id)}/events`);
    for await (const ev of sseEvents(r)) { jobEvent(kb, ev); last = ev; }
  } catch (e) { /* gone or not this key's: the catalog says the rest */ }
  endJob(kb);
  return last;
}

// A file's state: the running job's word on it first, then the catalog's (`record`: {status, reason,
// chunks}, or none for an upload never indexed); a re-uploaded file (`changed`) waits for the next build.
export function fileState(kb, name, record = null, changedSince = false) {
  const job = jobs.get(kb);
  const live = job?.files.get(name);
  if (live && (job.running || !record)) return job.running ? live : {...live, since: undefined};
  if (job?.running) return {state: job.waiting, since: job.since};
  if (!record || changedSince) return {state: "queued"};
  return FAILED.has(record.status) ? {state: "failed", reason: record.reason, raw: record.status}
    : {state: "ready", chunks: record.chunks};
}

// The running build's time left as the server estimated it ("about 2 min left"), else "".
export function etaText(kb) {
  const eta = jobs.get(kb)?.running ? jobs.get(kb).eta : null;
  if (!eta) return "";
  const s = Math.round(eta);
  if (s < 60) return t("etaS").replace("{n}", Math.max(s, 1));
  if (s < 3600) return t("etaMin").replace("{n}", Math.round(s / 60));
  return t("etaH").replace("{h}", Math.floor(s / 3600)).replace("{m}", String(Math.floor((s % 3600) / 60)).padStart(2, "0"));
}

// The build's line while it runs: the file in work and the time left.
export const buildingText = (kb) => [`${t("building")} ${jobs.get(kb)?.current || jobs.get(kb)?.reading || ""}`.trim(), etaText(kb)]
  .filter(Boolean).join(" · ");

// How long a state has lasted, as m:ss (h:mm:ss past an hour).
function lasted(since) {
  const s = Math.max(0, Math.floor((Date.now() - since) / 1000));
  const mm = `${Math.floor((s % 3600) / 60)}:${String(s % 60).padStart(2, "0")}`;
  return t("lastedFor").replace("{t}", s >= 3600 ? `${Math.floor(s / 3600)}:${mm.padStart(5, "0")}` : mm);
}

// A file's state as the status cell shows it (its reason below a failure; while a job runs, for how long).
function stateInner(s) {
  const label = {queued: t("stQueued"), parsing: t("stParsing"), ready: t("stReady"), failed: t("stFailed")}[s.state];
  const counts = s.state === "parsing" && s.chunks ? (s.pages ? ` · ${s.pages} ${t(s.pages === 1 ? "page" : "pagesN")}` : "") +
    ` · ${s.chunks} ${t("chunksN")}` + (s.embedded ? ` · ${s.embedded}/${s.chunks} ${t("embeddedN")}` : "") : "";
  const raw = s.raw && s.raw !== "failed" ? ` (${s.raw})` : "";
  const time = s.since && (s.state === "parsing" || s.state === "queued") ? ` · ${lasted(s.since)}` : "";
  return `<span class="file-state st-${s.state}"${s.state === "queued" ? ` title="${esc(t("queuedHint"))}"` : ""}>` +
    `${esc(label + counts + raw + time)}</span>${s.reason ? `<div class="reason" title="${esc(t("reasonFor"))}">${esc(s.reason)}</div>` : ""}`;
}

// The status cell of file `name` of `kb`, which the running job's ticks redraw.
export const stateHtml = (s, kb, name) =>
  `<span class="file-status" data-kb="${esc(kb)}" data-file="${esc(name)}">${stateInner(s)}</span>`;
