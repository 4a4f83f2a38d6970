// Lore console: version diff (two versions, files added/changed/removed, Recall@k/MRR/nDCG side by side
// on a chosen or uploaded eval set) and the activation log (who activated or rolled back, and why).
import {t} from "./i18n.js";
import {$, api, esc, when} from "./common.js";

// The reason for an activation, rollback or deletion (asked again while empty), or null when cancelled.
export function askReason(key, seq) {
  const ask = t(key).replace("{seq}", seq ?? "");
  for (let msg = ask; ;) {
    const reason = prompt(msg, "");
    if (reason === null) return null;
    if (reason.trim()) return reason.trim();
    msg = `${t("reasonRequired")}\n${ask}`;
  }
}

// The versions a diff can compare (a failed build has no index to compare).
export const diffable = (v) => v.versions.filter((x) => x.status !== "failed").map((x) => x.seq);

// The diff pickers, refilled from `v` (GET .../versions): the user's pair is kept only while it is still of
// this knowledge base, still diffable and nothing new was built or activated since; otherwise (and at first)
// the newest version against the active one (or the one before it), and an older diff's result is hidden.
function fillPickers(kb, v) {
  const seqs = diffable(v);
  const stamp = `${kb}\n${seqs.at(-1) ?? ""}\n${v.active ?? ""}`;
  const base = $("#diff-base"), cand = $("#diff-cand");
  const kept = [base.value, cand.value].map(Number);
  const stale = base.dataset.stamp !== stamp || !kept.every((s) => seqs.includes(s));
  const pick = stale ? [v.active && v.active !== seqs.at(-1) ? v.active : seqs.at(-2) ?? seqs[0], seqs.at(-1)] : kept;
  for (const [sel, seq] of [[base, pick[0]], [cand, pick[1]]]) {
    sel.innerHTML = seqs.map((s) => `<option>${s}</option>`).join("");
    sel.value = seq === undefined ? "" : String(seq);
    sel.dataset.stamp = stamp;
  }
  if (stale) $("#diff-result").classList.add("hidden");
  $("#diff-form").classList.toggle("hidden", seqs.length < 1);
}

export async function versionTools(kb, v) {
  fillPickers(kb, v);
  $("#activations tbody").innerHTML = v.activations.slice().reverse().map((a) => `<tr>
    <td>${esc(when(a.at))}</td><td>${a.from_seq ?? "–"} → ${a.to_seq}</td>
    <td>${a.key_name ? esc(a.key_name) : `<code>${esc(a.actor)}</code>`}</td><td>${esc(a.reason)}</td></tr>`).join("");
  try {
    const r = await api(`/api/kbs/${encodeURIComponent(kb)}/eval-sets`);
    const sel = $("#diff-eval");
    const keep = sel.value;
    sel.innerHTML = `<option value="">${esc(t("noEval"))}</option>` +
      r.eval_sets.map((e) => `<option value="${esc(e.name)}">${esc(e.name)} (${e.questions} ${esc(t("questionsN"))})</option>`).join("");
    if (r.eval_sets.some((e) => e.name === keep)) sel.value = keep;
  } catch (e) { /* a key that may not read reports: the diff button says why */ }
}

const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");

export function renderDiff(r) {
  const f = r.files;
  const list = (xs) => (xs.length ? `<ul>${xs.map((x) => `<li>${esc(x)}</li>`).join("")}</ul>` : `<p class="muted">–</p>`);
  let html = `<h4>v${r.base} → v${r.candidate}</h4><div class="diff-files">
    <div class="diff-added"><h5>${esc(t("added"))} (${f.added.length})</h5>${list(f.added)}</div>
    <div class="diff-changed"><h5>${esc(t("changed"))} (${f.changed.length})</h5>${f.changed.length ? `<ul>${f.changed.map((c) =>
      `<li>${esc(c.file)} <span class="muted">${esc(c.why.join(", "))} · ${c.chunks[0]} → ${c.chunks[1]} ${esc(t("chunks"))}</span></li>`).join("")}</ul>` : `<p class="muted">–</p>`}</div>
    <div class="diff-removed"><h5>${esc(t("removed"))} (${f.removed.length})</h5>${list(f.removed)}</div></div>
    <p class="muted">${f.unchanged} ${esc(t("unchanged"))}</p>`;
  const q = r.retrieval;
  if (!q) return html + `<p class="muted">${esc(t("noRetrieval"))}</p>`;
  const rows = [["recall", `Recall@${q.k}`], ["mrr", `MRR@${q.k}`], ["ndcg", `nDCG@${q.k}`]].map(([key, label]) => {
    const b = q.base ? q.base[key] : null, c = q.candidate[key];
    const d = b === null ? null : c - b;
    const cls = d === null || Math.abs(d) < 1e-9 ? "" : d > 0 ? "up" : "down";
    return `<tr><th>${label}</th><td>${pct(b)}</td><td>${pct(c)}</td><td class="${cls}">${d === null ? "–" : (d > 0 ? "+" : "") + (100 * d).toFixed(1)}</td></tr>`;
  }).join("");
  html += `<table class="diff-metrics"><tr><th>${esc(t("metric"))} (${q.questions} ${esc(t("questionsN"))})</th>
    <th>v${r.base}</th><th>v${r.candidate}</th><th>${esc(t("delta"))}</th></tr>${rows}</table>`;
  if (q.lost?.length) html += `<h5>${esc(t("lost"))}</h5>${list(q.lost)}`;
  if (q.gained?.length) html += `<h5>${esc(t("gained"))}</h5>${list(q.gained)}`;
  return html;
}

export async function compareVersions() {
  const kb = $("#admin-kb").value;
  const body = {base: Number($("#diff-base").value), candidate: Number($("#diff-cand").value)};
  const file = $("#diff-eval-file").files[0];
  if (file) {
    body.eval_jsonl = await file.text();
    if ($("#diff-save-as").value.trim()) body.save_as = $("#diff-save-as").value.trim();
  } else if ($("#diff-eval").value) body.eval_set = $("#diff-eval").value;
  const r = await api(`/api/kbs/${encodeURIComponent(kb)}/diff`, {method: "POST", body: JSON.stringify(body)});
  const el = $("#diff-result");
  el.innerHTML = renderDiff(r);
  el.classList.remove("hidden");
  if (file) { $("#diff-eval-file").value = ""; $("#diff-save-as").value = ""; }
}
