// The traces tab: the last answers' stages and timings, and one trace's detail (route, profile, cache, hits).
import {routeName, t} from "./i18n.js";
import {$, api, esc, fail, when} from "./common.js";

export async function loadTraces() {
  const rows = await api("/api/traces?limit=50");
  $("#traces tbody").innerHTML = rows.map((r) => `<tr data-id="${esc(r.id)}"><td>${esc(when(r.created_at))}</td>
    <td>${esc(r.kb)}</td><td>${esc(r.question)}</td><td>${esc(r.route ?? "")}</td><td>${esc(r.status)}</td>
    <td>${r.first_token_ms ?? ""}</td><td>${r.total_ms}</td></tr>`).join("");
  document.querySelectorAll("#traces tbody tr").forEach((tr) => tr.addEventListener("click", async () => {
    const tr_ = await api(`/api/traces/${tr.dataset.id}`);
    const stages = tr_.data.stages.map((s) => `<tr><td>${esc(s.stage)}</td><td>${s.at_ms}</td><td>${s.ms ?? ""}</td></tr>`).join("");
    const cache = tr_.data.cache || [];
    const cacheRows = cache.map((c) => `<tr class="${c.hit ? "hit" : "miss"}"><td>${esc(t(c.hit ? "hit" : "miss"))}</td>
      <td><code>${esc(c.key)}</code></td><td>${c.hits}</td></tr>`).join("");
    const el = $("#trace-detail");
    el.innerHTML = `<h4>${esc(tr_.question)} → ${esc(tr_.query)}</h4>
      <p>${esc(t("scenario"))}: ${esc(tr_.data.scenario || "default")} · ${esc(t("route"))}: ${esc(routeName(tr_.route || ""))}
      · ${esc(t("profile"))}: ${esc(tr_.data.profile || "-")}</p>
      <table><tr><th>stage</th><th>at ms</th><th>ms</th></tr>${stages}</table>
      <h4>${esc(t("cache"))}</h4>${cache.length ? `<table class="cache"><tr><th></th><th>${esc(t("key"))}</th><th>${esc(t("results"))}</th></tr>${cacheRows}</table>` : `<p class="muted">${esc(t("noCache"))}</p>`}
      <pre>${esc(JSON.stringify({confidences: tr_.data.confidences, plan: tr_.data.plan, hits: tr_.data.hits, filter: tr_.data.filter, scope: tr_.data.scope}, null, 2))}</pre>`;
    el.classList.remove("hidden");
  }));
}

export function initTraces() {
  $("#refresh-traces").addEventListener("click", () => loadTraces().catch(fail));
}
