// The chat: streamed, cited answers (fast or deep mode), the source panel, feedback, and the key's history.
import {routeName, t} from "./i18n.js";
import {$, ICONS, api, busy, esc, fail, fetchOk, headers, sseEvents, toast, when, where} from "./common.js";
import {showCitedPage} from "./pages.js";
import {renderMarkdown} from "./markdown.js";

let sessionId = null;

async function openPassage(c, kb) {
  $("#passage").classList.remove("hidden");
  $("#passage-where").textContent = where(c);
  $("#passage-text").textContent = c.text;
  showCitedPage(c, kb);
  const link = $("#passage-link");
  link.classList.add("hidden");
  const name = c.file.split("/").pop();
  try {
    const r = await fetch(`/api/kbs/${encodeURIComponent(kb)}/files/${encodeURIComponent(name)}`, {headers: headers()});
    if (r.ok) {
      // Inert bytes: whatever the file is (HTML, SVG), it never renders as a page of this origin.
      link.href = URL.createObjectURL(new Blob([await r.arrayBuffer()], {type: "application/octet-stream"}));
      link.download = name;
      link.classList.remove("hidden");
    }
  } catch (e) { /* the original is only kept for uploaded files */ }
}

// Deep mode: how the question was split, and what each part found (or did not).
function planPanel(end) {
  const panel = document.createElement("details");
  panel.className = "plan";
  const parts = end.sub_questions.map((s) => {
    const state = s.sufficient ? t("found") : t("notFound");
    const clash = s.consistent === false
      ? ` <span class="warning">${esc(t("disagree"))}${s.conflicts.length ? `: ${esc(s.conflicts.join("; "))}` : ""}</span>` : "";
    return `<li class="${s.sufficient ? "found" : "missing"}">${esc(s.question)} <span class="muted">(${esc(state)})</span>${clash}</li>`;
  }).join("");
  panel.innerHTML = `<summary>${esc(t("plan"))} · ${esc(end.kind)} · ${end.rounds} ${esc(t("rounds"))}</summary><ol>${parts}</ol>`;
  return panel;
}

function feedbackButtons(end) {
  const fb = document.createElement("div");
  fb.className = "feedback";
  fb.innerHTML = `<button class="up" title="${esc(t("helpful"))}" aria-label="${esc(t("helpful"))}">${ICONS.up}</button><button class="down" title="${esc(t("notHelpful"))}" aria-label="${esc(t("notHelpful"))}">${ICONS.down}</button>
    <span class="muted">${esc(t("trace"))} ${esc(end.trace_id)}</span>`;
  const send = async (rating) => {
    const note = rating < 0 ? (prompt(t("noteprompt")) || "") : "";
    try {
      await api("/api/feedback", {method: "POST", body: JSON.stringify({trace_id: end.trace_id, rating, note})});
      fb.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      toast(t("thanks"));
    } catch (e) { fail(e); }
  };
  fb.querySelector(".up").addEventListener("click", () => send(1));
  fb.querySelector(".down").addEventListener("click", () => send(-1));
  return fb;
}

// The cited sentence (marked) with a little context, not the start of the passage it came from.
function quoteHtml(c) {
  if (!c.quote) return "";
  const [a, b] = c.quote_span || [0, 0];
  const q = c.quote;
  return `<div class="muted quote">${esc(q.slice(0, a))}<mark>${esc(q.slice(a, b))}</mark>${esc(q.slice(b))}</div>`;
}

// An answer (streamed now, or reopened from the history) with its citations, badges, sources and feedback.
function renderAnswer(box, end, kb) {
  const cites = Object.fromEntries(end.citations.map((c) => [String(c.n), c]));
  renderMarkdown(box.querySelector(".text"), end.answer, new Set(Object.keys(cites)), (n) => openPassage(cites[n], kb));
  const meta = box.querySelector(".meta");
  meta.innerHTML = "";
  if (end.refused) meta.insertAdjacentHTML("beforeend", `<span class="badge refused">${esc(t("refused"))}</span>`);
  else if (typeof end.answer_confidence === "number") {
    meta.insertAdjacentHTML("beforeend", `<span class="badge">${esc(t("confidence"))} ${(end.answer_confidence * 100).toFixed(0)}%</span>`);
  }
  if (end.route) meta.insertAdjacentHTML("beforeend", `<span class="badge route" data-route="${esc(end.route)}">${esc(t("route"))}: ${esc(routeName(end.route))}</span>`);
  if (end.profile && end.profile.name) meta.insertAdjacentHTML("beforeend", `<span class="badge profile" title="${esc(end.profile.reason || "")}">${esc(t("profile"))}: ${esc(end.profile.name)}</span>`);
  if (end.low_confidence) meta.insertAdjacentHTML("beforeend", `<span class="warning">${esc(t("lowConfidence"))}</span>`);
  if (end.mode === "deep" && end.sub_questions?.length > 1) box.appendChild(planPanel(end));
  const list = document.createElement("ol");
  list.className = "sources";
  end.citations.forEach((c) => {
    const li = document.createElement("li");
    li.value = c.n;
    li.innerHTML = `<a href="#" data-n="${c.n}">${esc(where(c))}</a>${quoteHtml(c)}`;
    li.querySelector("a").addEventListener("click", (ev) => { ev.preventDefault(); openPassage(c, kb); });
    list.appendChild(li);
  });
  box.appendChild(list);
  box.appendChild(feedbackButtons(end));
}

async function ask(question) {
  const scenario = $("#chat-scenario").value;
  let kb = $("#chat-kb").value;
  const msgs = $("#messages");
  msgs.insertAdjacentHTML("beforeend", `<div class="msg user">${esc(question)}</div>`);
  const box = document.createElement("div");
  box.className = "msg assistant";
  box.innerHTML = `<div class="text"></div><div class="meta"></div>`;
  msgs.appendChild(box);
  const status = $("#status");
  try {
    const r = await fetchOk("/api/ask", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({...(scenario ? {scenario} : {kb}), question, session_id: sessionId,
                            mode: $("#chat-deep").checked ? "deep" : "fast"})});
    let text = "";
    for await (const ev of sseEvents(r)) {
      if (ev.event === "start") { sessionId = ev.data.session_id; kb = ev.data.kb; }
      else if (ev.event === "status") {
        const round = ev.data.round ? `${t("round")} ${ev.data.round} · ` : "";
        status.textContent = `${round}${ev.data.stage}${ev.data.query ? `: ${ev.data.query}` : ""}…`;
      }
      else if (ev.event === "token") { text += ev.data.text; renderMarkdown(box.querySelector(".text"), text); }
      else if (ev.event === "end") renderAnswer(box, ev.data, kb);
      else if (ev.event === "error") {
        box.classList.add("error");
        box.querySelector(".text").textContent = `${ev.data.message} (${t("trace")} ${ev.data.trace_id})`;
      }
      msgs.scrollTop = msgs.scrollHeight;
    }
  } catch (e) {
    box.classList.add("error");
    box.querySelector(".text").textContent = e.message;
  } finally {
    status.textContent = "";
  }
}

// The chat's scenario picker (a scenario decides the knowledge base, so the KB picker is then off).
export async function loadScenarios() {
  const list = await api("/api/scenarios");
  const sel = $("#chat-scenario");
  const keep = sel.value;
  sel.innerHTML = `<option value="" data-i18n="noScenario">${esc(t("noScenario"))}</option>` +
    list.map((s) => `<option value="${esc(s.id)}" title="${esc(s.description)}">${esc(s.name)} (${esc(s.id)})</option>`).join("");
  if (list.some((s) => s.id === keep)) sel.value = keep;
  $("#chat-kb").disabled = Boolean(sel.value);
  return list;
}

function newChat() {
  sessionId = null;
  $("#messages").innerHTML = "";
  $("#passage").classList.add("hidden");
}

// ---- chat history: the key's sessions, to continue or delete -------------------------------------

async function loadHistory() {
  const rows = await api("/api/sessions");
  const sel = $("#history");
  sel.innerHTML = `<option value="">–</option>` + rows.map((r) =>
    `<option value="${esc(r.id)}">${esc(when(r.updated_at, 16))} · ${esc(r.kb)} · ${esc(r.title || r.summary || r.id)}</option>`).join("");
  if (rows.some((r) => r.id === sessionId)) sel.value = sessionId;
}

async function openSession(id) {
  if (!id) return;
  const s = await api(`/api/sessions/${encodeURIComponent(id)}`);
  newChat();
  sessionId = s.id;
  if ([...$("#chat-kb").options].some((o) => o.value === s.kb)) $("#chat-kb").value = s.kb;
  const msgs = $("#messages");
  const ends = await Promise.all(s.messages.map((m) => (m.role !== "user" && m.trace_id ? traceEnd(m.trace_id) : null)));
  s.messages.forEach((m, i) => {
    const box = document.createElement("div");
    box.className = `msg ${m.role === "user" ? "user" : "assistant"}`;
    if (m.role === "user") box.textContent = m.content;
    else {
      box.innerHTML = `<div class="text"></div><div class="meta"></div>`;
      if (ends[i]) renderAnswer(box, {...ends[i], answer: m.content}, s.kb);
      else renderMarkdown(box.querySelector(".text"), m.content);
    }
    msgs.appendChild(box);
  });
  $("#history").value = id;
}

// A past answer's end (its citations) from its trace; null when the trace is gone or not the key's to read.
async function traceEnd(traceId) {
  try {
    const end = (await api(`/api/traces/${encodeURIComponent(traceId)}`)).data?.end;
    return end && Array.isArray(end.citations) ? end : null;
  } catch (e) { return null; }
}

export function initChat() {
  $("#ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = $("#question").value.trim();
    if (q && !$("#ask-form button").disabled) { $("#question").value = ""; busy($("#ask-form button"), () => ask(q)); }
  });
  $("#new-chat").addEventListener("click", newChat);
  // A session belongs to one knowledge base: changing what is asked starts a new chat.
  $("#chat-kb").addEventListener("change", newChat);
  $("#chat-scenario").addEventListener("change", () => { $("#chat-kb").disabled = Boolean($("#chat-scenario").value); newChat(); });
  $("#close-passage").addEventListener("click", () => $("#passage").classList.add("hidden"));
  $("#history").addEventListener("focus", () => loadHistory().catch(fail));
  $("#history").addEventListener("change", () => openSession($("#history").value).catch(fail));
  $("#delete-session").addEventListener("click", () => {
    if (!sessionId || !confirm(`${t("deleteChat")}?`)) return;
    api(`/api/sessions/${encodeURIComponent(sessionId)}`, {method: "DELETE"})
      .then(() => { newChat(); return loadHistory(); }).catch(fail);
  });
}
