// Lore web UI, the page's one script (an ES module, no build step): the API key, the language, the tabs,
// and each tab's module wired in. Every module imports only what stands below it: i18n ← common ← the tabs.
import {applyLang, t, ui} from "./i18n.js";
import {$, api, fail, loadKbs, may, session} from "./common.js";
import {initChat, loadScenarios} from "./chat.js";
import {initAdmin, loadAdmin} from "./admin.js";
import {initChunking} from "./chunking.js";
import {initDocuments, loadDocsPanel} from "./documents.js";
import {initConsole, loadFeedbackPanel, loadKeysPanel} from "./console.js";
import {initRetrieval, loadRetrievalPanel} from "./retrieval.js";
import {initScenarios, loadScenariosPanel} from "./scenarios.js";
import {initTraces, loadTraces} from "./traces.js";
import {initAudit, loadAuditPanel} from "./audit.js";

// What opening a tab loads (the chat tab loads nothing: its pickers follow the key).
const PANEL_LOADS = {
  admin: () => loadAdmin().catch(fail),
  documents: loadDocsPanel,
  retrieval: loadRetrievalPanel,
  scenarios: loadScenariosPanel,
  feedback: loadFeedbackPanel,
  keys: loadKeysPanel,
  traces: () => loadTraces().catch(fail),
  audit: loadAuditPanel,
};

function showTab(name) {
  document.querySelectorAll(".tab").forEach((b) => b.classList.toggle("active", b.dataset.tab === name));
  document.querySelectorAll(".panel").forEach((p) => p.classList.toggle("hidden", p.id !== `tab-${name}`));
  PANEL_LOADS[name]?.();
}

// What the key is and may do: what it could not use is hidden (the server still refuses it).
async function loadMe() {
  session.me = null;
  try {
    session.me = await api("/api/me");
  } finally {
    document.querySelectorAll("[data-needs]").forEach((el) => el.classList.toggle("hidden", !may(el.dataset.needs)));
    const me = session.me;
    $("#whoami").textContent = me ? `${t("signedInAs")}: ${me.name || t("unnamed")} · ${me.tenant} · ${me.roles.join(", ")}` : "";
    const active = $(".tab.active");
    if (active && active.classList.contains("hidden")) showTab("chat");
    else if (active?.dataset.tab === "keys") loadKeysPanel();  // its role choices come from here
  }
}

function loadPickers() {
  loadMe().catch(fail);
  loadKbs().catch(fail);
  loadScenarios().catch(fail);
}

// A module script runs once the document is parsed: the page's elements are all there.
// The key lives in this tab's sessionStorage only (gone when the tab closes, never shared with other
// tabs); a key an older version kept in localStorage is removed.
localStorage.removeItem("lore.key");
$("#key").value = sessionStorage.getItem("lore.key") || "";
applyLang();
$("#lang").addEventListener("click", () => { ui.lang = ui.lang === "zh" ? "en" : "zh"; localStorage.setItem("lore.lang", ui.lang); applyLang(); });
$("#key").addEventListener("change", () => { sessionStorage.setItem("lore.key", $("#key").value.trim()); loadPickers(); });
document.querySelectorAll(".tab").forEach((b) => b.addEventListener("click", () => showTab(b.dataset.tab)));
initChat();
initAdmin();
initChunking();
initDocuments();
initConsole();
initRetrieval();
initScenarios();
initTraces();
initAudit();
if ($("#key").value) loadPickers();
