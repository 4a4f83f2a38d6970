// Page images: a PDF page beside its (OCR) text, and the page a citation points at.
import {t} from "./i18n.js";
import {$, fetchOk} from "./common.js";

const pageImages = new Map();

// A page's PNG (object URL) and, for a cited chunk, whether its region was marked (X-Lore-Region).
async function pageImage(kb, file, page, chunk) {
  const key = `${kb}\u0000${file}\u0000${page}\u0000${chunk || ""}`;
  if (!pageImages.has(key)) {
    const q = chunk ? `?chunk=${encodeURIComponent(chunk)}` : "";
    const r = await fetchOk(`/api/kbs/${encodeURIComponent(kb)}/documents/${encodeURIComponent(file)}/pages/${page}${q}`);
    pageImages.set(key, {url: URL.createObjectURL(await r.blob()), region: r.headers.get("X-Lore-Region") || "none"});
  }
  return pageImages.get(key);
}

export async function showPageIn(box, kb, file, page, chunk) {
  const img = document.createElement("img");
  img.className = "page-img";
  img.alt = `${file} · ${t("page")} ${page}`;
  const got = await pageImage(kb, file, page, chunk);
  img.src = got.url;
  box.replaceChildren(img);
  return got.region;
}

const REGION_NOTE = {marked: "regionMarked", "not-found": "regionNotFound", "no-text-layer": "regionScanned", none: "wholePage"};

// The chat's source panel: for a PDF passage, its page with the passage's region highlighted (a scanned
// page, without a text layer, is shown whole and says so).
export async function showCitedPage(c, kb) {
  const box = $("#passage-page");
  box.replaceChildren();
  box.classList.add("hidden");
  if (!c.page || !/\.pdf$/i.test(c.file)) return;
  let region;
  try {
    region = await showPageIn(box, kb, c.file, c.page, c.chunk_id).catch(() => showPageIn(box, kb, c.file, c.page));
  } catch (e) { return; /* the original is kept only for uploaded files */ }
  const note = document.createElement("p");
  note.className = `muted region-${region}`;
  note.textContent = t(REGION_NOTE[region] || "wholePage");
  box.appendChild(note);
  box.classList.remove("hidden");
}
