// Web pages as sources from the admin tab: a crawl of a start page or a sitemap into an unversioned knowledge
// base, followed page by page from its job's events, and its Cancel button (it stops before its next page).
import {t} from "./i18n.js";
import {$, api, fetchOk, sseEvents, toast} from "./common.js";
import {askReason} from "./versions.js";

const kbUrl = (kb) => `/api/kbs/${encodeURIComponent(kb)}`;
let running = null;  // {kb, id} of the crawl this tab follows

// The crawl form for the chosen KB (a versioned one takes no crawl), and Cancel while its crawl runs.
export function showCrawl(kb, versioned) {
  $("#crawl-form").classList.toggle("hidden", versioned);
  $("#crawl-versioned").classList.toggle("hidden", !versioned);
  const button = $("#cancel-crawl");
  const id = running?.kb === kb ? running.id : null;
  button.classList.toggle("hidden", !id);
  if (!id || button.dataset.job !== id) { button.disabled = false; button.textContent = t("cancelCrawl"); }
  button.dataset.job = id || "";
}

// What one status event of the crawl says: each page with the counts so far, then the indexing.
function progressText(data) {
  if (data.stage === "crawled") return t("indexing");
  if (data.stage !== "page") return null;
  const c = data.counts || {};
  return `${t("crawling")} · ${(c.fetched || 0) + (c.unchanged || 0)} ${t("fetchedN")} · ${c.refused || 0} ${t("refusedN")} · ${data.url}`;
}

// Queue the crawl, then follow its events to the end; `reload` refreshes the tab afterwards.
export async function crawl(reload) {
  const kb = $("#admin-kb").value;
  const status = $("#crawl-status");
  const body = {url: $("#crawl-url").value.trim(), sitemap: $("#crawl-sitemap").checked};
  if ($("#crawl-max").value) body.max_pages = Number($("#crawl-max").value);
  if (!kb || !body.url) return;
  const r = await api(`${kbUrl(kb)}/sources`, {method: "POST", body: JSON.stringify(body)});
  running = {kb, id: r.job.id};
  showCrawl(kb, false);
  status.textContent = t("crawlQueued");
  try {
    for await (const ev of sseEvents(await fetchOk(r.events))) {
      const text = ev.event === "status" ? progressText(ev.data) : null;
      if (text) status.textContent = text;
      if (ev.event === "end") {
        status.textContent = t("crawlDone").replace("{n}", ev.data.pages);
        toast(status.textContent);
      } else if (ev.event === "error" && ev.data.cancelled_by) {
        status.textContent = t("crawlCancelled");
        toast(t("crawlCancelled"));
      } else if (ev.event === "error") {
        status.textContent = "";
        throw new Error(ev.data.message);
      }
    }
  } finally {
    running = null;
    showCrawl(kb, false);
    await reload();
  }
}

// Cancel the crawl this tab follows, confirmed with a reason (kept in the audit log).
export async function cancelCrawl() {
  const button = $("#cancel-crawl");
  const job = running;
  const reason = job ? askReason("confirmCancelCrawl") : null;
  if (reason === null) return;
  button.disabled = true;
  button.textContent = t("cancelling");
  try {
    await api(`${kbUrl(job.kb)}/jobs/${encodeURIComponent(job.id)}/cancel`, {method: "POST", body: JSON.stringify({reason})});
  } catch (e) { button.disabled = false; button.textContent = t("cancelCrawl"); toast(e.message, true); }
}
