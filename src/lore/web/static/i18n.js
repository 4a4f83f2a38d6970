// The web UI's words in English and Chinese: each key once, its two translations side by side.

export const I18N = {en: {}, zh: {}};
// The shown language (switched by the header's button, kept in localStorage).
export const ui = {lang: localStorage.getItem("lore.lang") || (navigator.language.startsWith("zh") ? "zh" : "en")};

// Adds a table of `key: [english, chinese]` (a nested table for a group such as the route names).
function strings(table, en = I18N.en, zh = I18N.zh) {
  for (const [key, value] of Object.entries(table)) {
    if (Array.isArray(value)) [en[key], zh[key]] = value;
    else strings(value, (en[key] ??= {}), (zh[key] ??= {}));
  }
}

export const t = (k) => (I18N[ui.lang] && I18N[ui.lang][k]) || I18N.en[k] || k;
export const routeName = (r) => (I18N[ui.lang].routes || {})[r] || I18N.en.routes[r] || r;
export const auditName = (a) => (I18N[ui.lang].auditActions || {})[a] || I18N.en.auditActions[a] || a;

// Writes the shown language's words into every element that names one (data-i18n, data-i18n-placeholder,
// data-i18n-title, and data-i18n-aria: the accessible name of a control without a visible label).
export function applyLang() {
  document.documentElement.lang = ui.lang === "zh" ? "zh-CN" : "en";
  document.querySelectorAll("[data-i18n]").forEach((el) => { el.textContent = t(el.dataset.i18n); });
  document.querySelectorAll("[data-i18n-placeholder]").forEach((el) => { el.placeholder = t(el.dataset.i18nPlaceholder); });
  document.querySelectorAll("[data-i18n-title]").forEach((el) => { el.title = t(el.dataset.i18nTitle); });
  document.querySelectorAll("[data-i18n-aria]").forEach((el) => el.setAttribute("aria-label", t(el.dataset.i18nAria)));
  document.querySelector("#lang").textContent = ui.lang === "zh" ? "English" : "中文";
}

// The chat, the knowledge-base admin and the traces.
strings({
  chat: ["Chat", "问答"], admin: ["Knowledge bases", "知识库"], traces: ["Traces", "追踪"],
  apiKey: ["API key", "API 密钥"], kb: ["Knowledge base", "知识库"], newChat: ["New chat", "新对话"],
  source: ["Source", "来源"], openOriginal: ["Open the original file", "打开原始文件"],
  askPlaceholder: ["Ask a question…", "请输入问题…"], ask: ["Ask", "提问"], create: ["Create", "创建"],
  upload: ["Upload", "上传"], file: ["File", "文件"], size: ["Size", "大小"],
  activateAfter: ["activate after build", "构建后激活"], qualityGate: ["quality gate", "质量门禁"],
  build: ["Build new version", "构建新版本"], ingest: ["Ingest (unversioned)", "直接入库（无版本）"],
  versions: ["Versions", "版本"], status: ["Status", "状态"], files: ["Files +/~/-/=", "文件 +/~/-/="],
  chunks: ["Chunks", "分块"], gate: ["Gate", "门禁"], rollback: ["Roll back", "回滚"], refresh: ["Refresh", "刷新"],
  time: ["Time", "时间"], question: ["Question", "问题"], route: ["Route", "路由"], activate: ["Activate", "激活"],
  report: ["Report", "报告"], diff: ["Diff", "差异"], preview: ["Preview", "预览"],
  deleteFile: ["Delete", "删除"], deleted: ["Deleted", "已删除"],
  deletedNextBuild: ["Upload deleted; the next build drops the file from the index", "上传文件已删除；下次构建会从索引中移除该文件"],
  confirmDeleteFile: ["Delete {file}? Its upload is removed (and its chunks, or in a versioned KB at the next build).",
    "删除 {file}？将移除其上传文件（以及其分块；版本化知识库在下次构建时移除）。"],
  needKey: ["Enter an API key first.", "请先输入 API 密钥。"],
  lowConfidence: ["Low confidence: check the cited passages.", "置信度低：请核对引用的段落。"],
  refused: ["Not in the knowledge base", "知识库中没有相关内容"], confidence: ["confidence", "置信度"],
  helpful: ["Helpful", "有帮助"], notHelpful: ["Not helpful", "没帮助"],
  thanks: ["Thanks for the feedback.", "感谢反馈。"], page: ["page", "页"], sheet: ["sheet", "工作表"],
  row: ["row", "行"], slide: ["slide", "幻灯片"], building: ["Building…", "构建中…"],
  uploading: ["Uploading…", "上传中…"], done: ["Done", "完成"], trace: ["trace", "追踪"],
  noteprompt: ["What was wrong? (optional)", "哪里不对？（可选）"], deepMode: ["Deep mode", "深度模式"],
  round: ["round", "轮"], plan: ["Plan", "分解"], rounds: ["rounds", "轮检索"], found: ["found", "已找到"],
  notFound: ["not found in the knowledge base", "知识库中没有找到"], disagree: ["documents disagree", "资料不一致"],
  scenario: ["Scenario", "场景"], noScenario: ["(none)", "（无）"], profile: ["profile", "提示模板"],
  cache: ["Search cache", "检索缓存"], hit: ["hit", "命中"], miss: ["miss", "未命中"], results: ["results", "结果数"],
  key: ["key", "键"],
  noCache: ["no cached searches (unversioned KB or no scenario)", "没有缓存的检索（无版本知识库或未使用场景）"],
  drop: ["drop", "删除"], commitChunks: ["Commit these chunks", "提交这些分块"],
  committed: ["chunks committed", "个分块已提交"],
  editHint: ["Edit the chunks' text or drop chunks, then commit them (replaces this file's chunks).",
    "可编辑分块文本或删除分块，然后提交（替换该文件现有的分块）。"],
  versionedNoCommit: ["Versioned knowledge base: chunks change only through builds.", "有版本的知识库：分块只能通过构建更新。"],
  routes: {
    retrieval: ["retrieval", "检索"], faq_exact: ["FAQ (exact)", "FAQ（精确匹配）"], faq_direct: ["FAQ", "FAQ"],
    greeting: ["greeting", "问候"], thanks: ["thanks", "致谢"], handoff: ["hand-off to a person", "转人工"],
    out_of_scope: ["out of scope", "超出范围"], refused: ["refused", "拒答"],
  },
});

// The console panels: documents and chunks, page images, retrieval test, feedback review, keys, chat history.
strings({
  documents: ["Documents", "文档"], retrieval: ["Retrieval test", "检索测试"], feedbackTab: ["Feedback", "反馈"],
  keys: ["Keys", "密钥"], name: ["Name", "名称"], type: ["Type", "类型"], where_: ["Pages/sheets/rows", "页/表/行"],
  ocr: ["OCR pages", "OCR 页数"], tenant: ["Tenant", "租户"], dataset: ["Dataset", "数据集"],
  visibility: ["Visibility", "可见性"], roles: ["Roles", "角色"], inVersions: ["Versions", "所在版本"],
  updated: ["Updated", "更新时间"], filter: ["Filter…", "筛选…"], allStatuses: ["all statuses", "全部状态"],
  showChunks: ["Chunks", "分块"], parent: ["Parent passage", "父段落"], metadata: ["Metadata", "元数据"],
  query: ["Query", "查询"], mode: ["Mode", "模式"], topK: ["Top k", "返回条数"], version: ["Version", "版本"],
  search: ["Search", "检索"], rank: ["Rank", "排名"], dense: ["dense", "向量"], bm25: ["BM25", "BM25"],
  fused: ["fused", "融合"], applied: ["applied", "已生效"], terms: ["Query terms", "查询词"],
  rating: ["Rating", "评价"], answer: ["Answer", "回答"], note: ["Note", "备注"],
  export: ["Export as eval set", "导出为评测集"],
  redacted: ["redacted: your key may not read a cited passage", "已隐去：你的密钥无权阅读被引用的段落"],
  createKey: ["Create key", "创建密钥"], revoke: ["Revoke", "吊销"], created: ["Created", "创建时间"],
  revoked: ["Revoked", "已吊销"], newSecret: ["New key (shown once):", "新密钥（只显示一次）："],
  expires: ["Expires", "到期"], lastUsed: ["Last used", "最近使用"], never: ["never", "从不"],
  expired: ["expired", "已过期"], expiresInDays: ["expires in days (optional)", "有效天数（可选）"],
  cancelBuild: ["Cancel build", "取消构建"], cancelling: ["Cancelling…", "正在取消…"],
  cancelled: ["Build cancelled", "构建已取消"], reparse: ["Re-parse", "重新解析"],
  confirmReparse: ["Parse and embed {file} again as a new version? The other files stay as they are.",
    "将 {file} 重新解析并嵌入为新版本？其他文件保持不变。"],
  reparseQueued: ["Re-parse queued as a new build", "重新解析已作为新构建排队"],
  confirmCancelBuild: ["Cancel this build? It stops before its next file and the active version stays. Give a reason (kept in the audit log):",
    "取消此次构建？它会在下一个文件前停止，当前生效版本不变。请填写原因（记入审计日志）："],
  noDocs: ["No documents yet: upload files and ingest or build.", "还没有文档：请上传文件并入库或构建。"],
  reasonFor: ["Why it failed", "失败原因"], forbidden: ["Your key may not do this", "你的密钥无权执行此操作"],
  keysNeedAdmin: ["keys may not be listed or made by this key (an admin and platform-admin key may)",
    "此密钥不可查看或创建密钥（需管理员兼平台管理员密钥）"],
  cites: ["Citations", "引用"], history: ["History", "历史对话"], deleteChat: ["Delete chat", "删除对话"],
  switchOff: ["Switch off", "停用"], switchOn: ["Switch on", "启用"], switchedOff: ["switched off", "已停用"],
  edited: ["edited", "已编辑"], pendingBuild: ["pending: in the next build", "待生效：下次构建"],
  pendingIngest: ["pending: at the next ingest of this file", "待生效：该文件下次入库时"],
  pageImage: ["Page image", "页面图像"],
  wholePage: ["The whole page: the passage's region could not be marked.", "显示整页：无法标出段落所在区域。"],
  regionMarked: ["The passage is highlighted on its page.", "段落已在页面上高亮标出。"],
  regionNotFound: ["The passage's text was not found in the page's text layer: the whole page is shown.",
    "在页面文字层中未找到该段落：显示整页。"],
  regionScanned: ["A scanned page (no text layer, read by OCR): the whole page is shown.",
    "扫描页（无文字层，由 OCR 识别）：显示整页。"],
  scannedHint: ["Scanned pages: each page image beside the text OCR read from it. Fix a misread chunk with Edit, then mark the page reviewed.",
    "扫描页：页面图像与 OCR 识别出的文字并排显示，识别有误的分块可点“编辑”修正，然后将该页标记为已审核。"],
  markReviewed: ["Mark page reviewed", "标记本页已审核"], reviewedBy: ["OCR reviewed by", "OCR 审核人"],
  unmark: ["Undo review", "撤销审核"], unreviewed: ["unreviewed", "未审核"],
  stQueued: ["queued", "排队中"], stParsing: ["parsing", "解析中"], stReady: ["ready", "就绪"], stFailed: ["failed", "失败"],
  chunksN: ["chunks", "个分块"], embeddedN: ["embedded", "已向量化"], queuedHint: ["Waiting for the next build or ingest", "等待下次构建或入库"],
  pagesN: ["pages", "页"], etaS: ["about {n} s left", "约剩 {n} 秒"], etaMin: ["about {n} min left", "约剩 {n} 分钟"],
  etaH: ["about {h} h {m} min left", "约剩 {h} 小时 {m} 分钟"], lastedFor: ["for {t}", "已持续 {t}"],
  uploadFailed: ["Upload failed", "上传失败"], chooseFiles: ["Files to upload", "要上传的文件"], close: ["Close", "关闭"],
  newKbName: ["Name of a new knowledge base", "新知识库名称"], statusFilter: ["Status filter", "状态筛选"],
  ratingFilter: ["Rating filter", "评价筛选"], faqVisibility: ["Visibility", "可见性"], faqRoles: ["Roles", "角色"],
});

// Scenarios: configuration, FAQ rows, routing test.
strings({
  scenarios: ["Scenarios", "场景"], configuration: ["Configuration", "配置"],
  routingTest: ["Routing test", "路由测试"], routeIt: ["Route", "路由"], faq: ["FAQ", "常见问题"],
  addFaq: ["Add FAQ row", "新增 FAQ"], edit: ["Edit", "编辑"], disable: ["Disable", "停用"],
  enable: ["Enable", "启用"], save: ["Save", "保存"], cancel: ["Cancel", "取消"], answerText: ["Answer", "答案"],
  source_: ["Source", "来源"], line: ["Line", "行号"],
  faqHidden: ["rows outside your key's access are not shown", "行超出你的密钥权限，未显示"],
  faqNextBuild: ["Changes go into faq.csv; the knowledge base has them after the scenario's next build (lore scenario build).",
    "修改写入 faq.csv；场景下次构建（lore scenario build）后知识库才会生效。"],
  intent: ["Intent", "意图"], plan_: ["Plan", "检索计划"], defaultOpt: ["(default)", "（默认）"],
  readOnly: ["Read only: editing needs an admin key of this scenario's knowledge base.", "只读：编辑需要该场景知识库的管理员密钥。"],
  faqStatus: {
    ok: ["ok", "正常"], duplicate: ["duplicate", "重复"], conflict: ["conflict", "冲突"],
    disabled: ["disabled", "已停用"], invalid: ["invalid", "无效"],
  },
});

// Versions: the diff of two versions and the activation log.
strings({
  compare: ["Compare", "对比"], base: ["Base", "基准版本"], candidate: ["Candidate", "候选版本"],
  evalSet: ["Eval set", "评测集"], noEval: ["(configured or none)", "（配置的或无）"],
  uploadEval: ["or a JSONL file", "或上传 JSONL 文件"], saveAs: ["save as (optional)", "另存为（可选）"],
  added: ["Added", "新增"], changed: ["Changed", "变更"], removed: ["Removed", "删除"],
  unchanged: ["unchanged", "未变"], metric: ["Metric", "指标"], delta: ["Δ", "变化"],
  lost: ["Found by the base only", "仅基准版本找到"], gained: ["Found by the candidate only", "仅候选版本找到"],
  activations: ["Activation log", "激活记录"], actor: ["Who", "操作者"], reason: ["Reason", "原因"],
  fromTo: ["From → to", "从 → 到"],
  confirmActivate: ["Activate version {seq}? Give a reason (kept in the activation log):",
    "激活版本 {seq}？请填写原因（记入激活记录）："],
  confirmRollback: ["Roll back to the previous version? Give a reason (kept in the activation log):",
    "回滚到上一个版本？请填写原因（记入激活记录）："],
  noRetrieval: ["No eval set: choose one or upload a JSONL file to compare retrieval.",
    "未选择评测集：选择或上传 JSONL 评测集以对比检索效果。"],
  questionsN: ["questions", "个问题"],
});

// What the key may do, the audit log, keys and knowledge-base deletion.
strings({
  audit: ["Audit", "审计"], allKbs: ["(all)", "（全部）"], action: ["Action", "操作"], target: ["Target", "对象"],
  details: ["Details", "详情"], deleteKb: ["Delete knowledge base", "删除知识库"], kbDeleted: ["Knowledge base deleted", "知识库已删除"],
  confirmDeleteKb: ["Delete knowledge base {seq} with all its files, versions and reports? Give a reason (kept in the audit log):",
    "删除知识库 {seq} 及其全部文件、版本和报告？请填写原因（记入审计日志）："],
  reasonRequired: ["A reason is required.", "必须填写原因。"], copy: ["Copy", "复制"], copied: ["Copied", "已复制"],
  datasetsOptional: ["datasets (optional)", "数据集（可选）"], signedInAs: ["key", "密钥"],
  operator: ["operator (CLI)", "运维（命令行）"], unnamed: ["unnamed key", "未命名密钥"],
  noAudit: ["No audit entries yet.", "暂无审计记录。"],
  rolesHint: ["Ctrl/⌘-click to choose several roles", "按住 Ctrl/⌘ 点击可选多个角色"],
  auditActions: {
    activate: ["activate", "激活"], rollback: ["roll back", "回滚"], build: ["build", "构建"], create: ["create", "创建"],
    delete: ["delete knowledge base", "删除知识库"], delete_file: ["delete file", "删除文件"], share: ["share", "共享"],
    unshare: ["unshare", "取消共享"], key_create: ["create key", "创建密钥"], key_revoke: ["revoke key", "吊销密钥"],
    chunk_edit: ["edit chunk", "编辑分块"], ocr_review: ["OCR review", "OCR 审核"], crawl: ["crawl", "抓取"],
    owner: ["set owner", "设置所有者"], cancel: ["cancel a build or crawl", "取消构建或抓取"],
  },
});

// The retrieval test's settings, its scores explained, and the refusal verdict.
strings({
  rtSettings: ["Retrieval settings", "检索设置"], modeHybrid: ["hybrid (dense + BM25)", "混合（向量 + BM25）"],
  modeDense: ["dense only", "仅向量"], modeBm25: ["BM25 only", "仅 BM25"], rrfK: ["RRF k", "RRF k"],
  rrfKHint: ["Hybrid fusion: each list adds 1/(k + rank); a smaller k favours the top ranks.",
    "混合融合：每个列表贡献 1/(k + 排名)；k 越小越偏重排名靠前的结果。"],
  recallK: ["Candidates", "召回数"], useReranker: ["Reranker", "重排序"], rerankK: ["Re-scored", "重排数"],
  asConfigured: ["default", "默认"], refusalThreshold: ["Refusal threshold", "拒答阈值"],
  kbThreshold: ["KB's", "知识库的"],
  thresholdHint: ["An answer is refused below this P(the knowledge base answers); empty: the knowledge base's own.",
    "P(知识库能回答) 低于此值时拒答；留空则用知识库自己的阈值。"],
  scores: ["Scores", "分数"], passageCol: ["Passage", "段落"],
  fusedScore: ["fused (RRF)", "融合（RRF）"], denseScore: ["dense", "向量"], bm25Score: ["BM25", "BM25"],
  rerankScore: ["reranker", "重排序"], bm25Hidden: ["not shown: this store counts every tenant's chunks", "不显示：该存储按所有租户的分块计算"],
  notRetrieved: ["not in this list", "未在该列表中"], orderedBy: ["ordered by", "排序依据"],
  scoresLegend: ["dense: cosine similarity of the query's and the chunk's embeddings (#: its rank among the dense candidates). BM25: keyword score of the query terms in the chunk (#: its rank). fused: reciprocal-rank fusion of both ranks, 1/(k + dense #) + 1/(k + BM25 #). reranker: the second-stage model's score, which then orders the hits.",
    "向量：查询与分块嵌入的余弦相似度（#：在向量候选中的排名）。BM25：查询词在分块中的关键词得分（#：其排名）。融合：两个排名的倒数排名融合，1/(k + 向量#) + 1/(k + BM25#)。重排序：第二阶段模型的得分，结果按它排序。"],
  pAnswerable: ["P(the knowledge base answers)", "P(知识库能回答)"], threshold: ["threshold", "阈值"],
  wouldAnswer: ["an answer would be given", "会给出回答"], wouldRefuse: ["the question would be refused", "会拒答"],
  notHeld: ["no passage holds half of the question's words: refused at any threshold", "没有段落包含问题的一半词语：任何阈值下都会拒答"],
  firstJudgement: ["as an answer judges it first (it may still try the question part by part or in the other language)",
    "按回答时的首次判断（回答时仍可能分句或换语言再试）"],
  reranked: ["reranked by", "重排序："], candidatesN: ["candidates", "个候选"], noHits: ["No hits.", "没有命中结果。"],
});

// Web pages as sources: a crawl from the admin tab, followed page by page, and its cancel.
strings({
  webPages: ["Web pages", "网页"], crawlUrl: ["Start page or sitemap URL", "起始网页或站点地图 URL"],
  isSitemap: ["it is a sitemap", "这是站点地图"], maxPages: ["Max pages", "最多页数"], crawl: ["Crawl", "抓取"],
  crawlVersioned: ["Versioned knowledge base: web pages are added through builds, not crawls.", "有版本的知识库：网页需通过构建加入，不能直接抓取。"],
  crawlQueued: ["Crawl queued…", "抓取已排队…"], crawling: ["Crawling", "抓取中"], fetchedN: ["fetched", "已抓取"],
  refusedN: ["refused", "已拒绝"], indexing: ["Indexing the pages…", "正在索引网页…"],
  crawlDone: ["Crawl done: {n} page(s) indexed", "抓取完成：已索引 {n} 个网页"],
  cancelCrawl: ["Cancel crawl", "取消抓取"], crawlCancelled: ["Crawl cancelled", "抓取已取消"],
  confirmCancelCrawl: ["Cancel this crawl? It stops before its next page; pages already indexed stay. Give a reason (kept in the audit log):",
    "取消此次抓取？它会在下一个网页前停止，已索引的网页保留。请填写原因（记入审计日志）："],
});

// The admin tools of issue 39: a KB's chunking with its preview, feedback into FAQ, the quality report page.
strings({
  ckTitle: ["Chunking", "分块"], ckChild: ["Chunk size", "分块大小"], ckOverlap: ["Overlap", "重叠"],
  ckParentSize: ["Parent size", "父块大小"], ckSave: ["Save for the next build", "保存（下次构建生效）"],
  ckReset: ["Use the configured sizes", "恢复配置的大小"], ckStrategy: ["Chunking strategy", "分块策略"],
  ckStructure: ["structure-aware (articles, clauses, lists, table rows kept whole)", "按结构（条、款、列表、表格行保持完整）"],
  ckSemantic: ["semantic (cut where the meaning moves, by sentence embeddings)", "语义（按句向量，在语义转变处切分）"],
  ckStructureShort: ["structure-aware", "按结构"], ckSemanticShort: ["semantic", "语义"],
  ckHint: ["Sizes are in text units: one CJK character or three other characters.", "大小以文本单位计：一个中日韩字符或三个其他字符。"],
  ckSource: ["Preview", "预览"], ckPasted: ["pasted text", "粘贴的文本"],
  ckPaste: ["Text to split (when no file is chosen)", "要切分的文本（未选文件时）"], ckPreview: ["Preview chunks", "预览分块"],
  ckOwn: ["This knowledge base's own sizes (set by {who}, {at}); its next build uses them.", "本知识库自己的大小（{who} 于 {at} 设置）；下次构建使用它们。"],
  ckDefaults: ["The configured sizes ({sizes}, {strategy}); save to give this knowledge base its own.", "使用配置的大小（{sizes}，{strategy}）；保存即可为本知识库单独设置。"],
  ckSaved: ["Chunking saved: the next build uses it.", "分块设置已保存：下次构建生效。"],
  ckNeedSource: ["Choose a file or paste text to preview.", "请选择文件或粘贴文本再预览。"],
  ckSummary: ["{strategy}: {n} chunks in {p} parents (showing {shown}); nothing was built.", "{strategy}：共 {n} 个分块，{p} 个父块（显示 {shown} 个）；未进行构建。"],
  ckUnits: ["units", "单位"], ckParent: ["parent", "父块"],
  fbFaqCol: ["FAQ", "FAQ"], fbToFaq: ["Make a FAQ entry", "转为 FAQ 条目"], fbCorrected: ["Corrected answer", "更正后的答案"],
  fbSaveFaq: ["Save as FAQ entry", "保存为 FAQ 条目"], fbCancel: ["Cancel", "取消"], fbHandled: ["handled", "已处理"],
  fbNoScenario: ["No scenario of yours answers from knowledge base {kb}: a FAQ entry needs one.", "没有使用知识库 {kb} 的场景：FAQ 条目需要一个场景。"],
  fbSaved: ["Saved as FAQ row {row} of scenario {scenario}; it is indexed at the scenario's next build.", "已保存为场景 {scenario} 的第 {row} 行 FAQ；场景下次构建时索引。"],
  rpTitle: ["Quality report", "质量报告"], rpPrint: ["Print", "打印"], rpSummary: ["Summary", "概要"],
  rpFiles: ["Files", "文件"], rpScanned: ["scanned", "扫描"], rpLoaded: ["loaded", "已加载"], rpReused: ["reused", "复用"],
  rpKept: ["kept", "保留"], rpFailedN: ["failed", "失败"], rpUnsupported: ["unsupported", "不支持"], rpEmpty: ["empty", "空"],
  rpNew: ["new", "新增"], rpTooShort: ["too short", "过短"], rpTooLong: ["too long", "过长"], rpDuplicates: ["duplicates", "重复"],
  rpPages: ["OCR pages", "OCR 页数"], rpUnreviewed: ["not reviewed", "未审核"], rpTables: ["Tables", "表格"], rpRows: ["rows", "行"],
  rpSkipped: ["skipped", "跳过"], rpConflicts: ["conflicts", "冲突"], rpFailures: ["Failures", "失败项"], rpReason: ["Reason", "原因"],
  rpPerFile: ["Every file", "所有文件"], rpReindexed: ["Re-indexed unchanged files", "重新索引的未变更文件"],
  rpEval: ["Eval set", "评测集"], rpActive: ["active", "当前版本"], rpEncoding: ["Encoding repairs", "编码修复"],
  rpEncodingCol: ["read as", "按此编码读取"], rpNone: ["None.", "无。"], rpNoGate: ["No quality gate was run.", "未运行质量门禁。"],
  rpPassed: ["passed", "通过"], rpFailed: ["FAILED", "未通过"], rpRemoved: ["removed", "移除"],
  rpRemovedFiles: ["Removed files", "移除的文件"], rpNoEval: ["No eval set was configured for this build.", "本次构建未配置评测集。"],
});
