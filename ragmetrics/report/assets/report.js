/* ragmetrics HTML report: the table of samples and the detail of one sample.
 * Every value from the data reaches the page as text (text nodes, textContent, setAttribute), never as markup.
 * The data layout is documented in ragmetrics/report/html.py (_payload). A run's conversations are drawn
 * by conversations.js, which this script calls at start-up (see "conversations" below). */
(() => {
  "use strict";
  const t0 = performance.now();
  const D = JSON.parse(document.getElementById("rm-data").textContent);
  const S = D.strings, METRICS = D.metrics, STATUSES = D.statuses, JUDGES = D.judges, ROWS = D.rows;
  const NM = METRICS.length, N = ROWS.length;
  // row, result and claim positions (see _payload)
  const R_INDEX = 0, R_ID = 1, R_Q = 2, R_A = 3, R_CTX = 4, R_REF = 5, R_SCORES = 6, R_STATUS = 7,
    R_COST = 8, R_LAT = 9, R_RESULTS = 10, R_ERRORS = 11, R_SPREAD = 12;
  const X_SCORE = 0, X_STATUS = 1, X_MSG = 2, X_REASONING = 3, X_PASSED = 4, X_THRESHOLD = 5, X_CLAIMS = 6,
    X_USAGE = 7, X_LAT = 8, X_JUDGE = 9, X_DETAILS = 10, X_SIG = 11, X_CTXV = 12, X_SPLIT = 13;
  const SPLITS = ["answer", "reference"]; // the text a result's claims were split from (X_SPLIT)
  const V_INDEX = 0, V_REL = 1, V_SUPPORTS = 2, V_REASON = 3; // a context verdict (see _payload.context_view)
  const C_TEXT = 0, C_S0 = 1, C_S1 = 2, C_SPAN = 3, C_VERDICT = 4, C_REL = 5, C_CTX = 6, C_E0 = 7, C_E1 = 8,
    C_QUOTE = 9, C_VERIFIED = 10, C_REASON = 11;
  const VERDICTS = [null, "supported", "contradicted", "not_found"];
  const RELEVANCE = [null, "direct", "supporting", "off_topic"];
  const BINS = 10;
  const str = (i) => (i == null || i < 0 ? "" : S[i]);
  const label = (name) => String(name).replace(/_/g, " ");

  // -- small DOM helper: text children only, attributes through setAttribute ---------------------
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const key of Object.keys(attrs)) {
        const v = attrs[key];
        if (v == null || v === false) continue;
        if (key === "class") el.className = v;
        else if (key.startsWith("on")) el.addEventListener(key.slice(2), v);
        else el.setAttribute(key, v === true ? "" : String(v));
      }
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid == null || kid === false) continue;
      el.append(kid instanceof Node ? kid : String(kid));
    }
    return el;
  }
  const fmt = (s, d = 3) => (s == null ? "–" : s.toFixed(d));
  const money = (c) => (c === 0 ? "$0" : c < 0.0001 ? "< $0.0001" : "$" + c.toFixed(c >= 1 ? 2 : 4));
  const ms = (v) => (v >= 1000 ? (v / 1000).toFixed(2) + " s" : Math.round(v) + " ms");
  const int = (v) => Number(v).toLocaleString("en-US");
  const binOf = (s) => Math.min(Math.floor(s * BINS), BINS - 1);

  // -- derived per row: claim counts of the primary verdict metric, contradicted flag -----------
  let primary = -1;
  for (let m = 0; m < NM && primary < 0; m++) {
    for (let i = 0; i < N; i++) {
      const res = ROWS[i][R_RESULTS][m];
      if (res && res[X_CLAIMS].some((c) => c[C_VERDICT] > 0)) { primary = m; break; }
    }
  }
  const counts = new Int32Array(N * 3);
  const contra = new Uint8Array(N);
  for (let i = 0; i < N; i++) {
    const results = ROWS[i][R_RESULTS];
    for (let m = 0; m < NM; m++) {
      const res = results[m];
      if (!res) continue;
      for (const c of res[X_CLAIMS]) {
        if (c[C_VERDICT] === 2) contra[i] = 1;
        if (m === primary && c[C_VERDICT] > 0) counts[i * 3 + c[C_VERDICT] - 1] += 1;
      }
    }
  }
  let hay = null; // lower-cased id, question and answer, built on the first search
  const haystack = () => hay || (hay = ROWS.map((r) => (r[R_ID] + "\n" + str(r[R_Q]) + "\n" + str(r[R_A])).toLowerCase()));

  // -- state ---------------------------------------------------------------------------------------
  const state = {
    q: "", status: "any", contradicted: false, rm: -1, min: null, max: null, bin: null,
    sort: "index", dir: 1, selected: -1, tab: primary >= 0 ? primary : 0,
  };
  let view = [];

  // -- toolbar -------------------------------------------------------------------------------------
  const toolbar = document.getElementById("toolbar");
  const pane = document.getElementById("table-pane");
  const detail = document.getElementById("detail");
  if (!toolbar || !pane || !detail) { done(); return; }

  const search = h("input", { type: "search", id: "f-text", placeholder: "id, question or answer…", autocomplete: "off", "aria-controls": "samples-table" });
  const statusSel = h("select", { id: "f-status" },
    h("option", { value: "any" }, "Any status"),
    h("option", { value: "scored" }, "Scored by every metric"),
    h("option", { value: "unscored" }, "Missing a score"),
    STATUSES.map((s) => h("option", { value: "s:" + s }, "Status: " + label(s))));
  const contraBox = h("input", { type: "checkbox", id: "f-contra" });
  const rangeMetric = h("select", { id: "f-metric" }, h("option", { value: "-1" }, "Any metric"),
    METRICS.map((name, m) => h("option", { value: String(m) }, name)));
  const minIn = h("input", { type: "number", id: "f-min", min: "0", max: "1", step: "0.05", placeholder: "0", inputmode: "decimal" });
  const maxIn = h("input", { type: "number", id: "f-max", min: "0", max: "1", step: "0.05", placeholder: "1", inputmode: "decimal" });
  const reset = h("button", { type: "button", class: "btn", id: "f-reset" }, "Reset");
  const count = h("span", { class: "count", id: "row-count", role: "status", "aria-live": "polite" });
  toolbar.append(
    h("label", { for: "f-text" }, "Search", search),
    h("label", { for: "f-status" }, "Status", statusSel),
    h("label", { class: "inline", for: "f-contra" }, contraBox, "Has contradicted claims"),
    h("div", { class: "range", role: "group", "aria-label": "Score range" },
      h("label", { for: "f-metric" }, "Score of", rangeMetric),
      h("label", { for: "f-min" }, "min", minIn),
      h("label", { for: "f-max" }, "max", maxIn)),
    reset, count);

  let searchTimer = 0;
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { state.q = search.value.trim().toLowerCase(); refresh(); }, 120);
  });
  statusSel.addEventListener("change", () => { state.status = statusSel.value; refresh(); });
  contraBox.addEventListener("change", () => { state.contradicted = contraBox.checked; refresh(); });
  const readRange = () => {
    state.rm = Number(rangeMetric.value);
    const lo = parseFloat(minIn.value), hi = parseFloat(maxIn.value);
    state.min = Number.isFinite(lo) ? lo : null;
    state.max = Number.isFinite(hi) ? hi : null;
    state.bin = null;
    markBins();
    refresh();
  };
  rangeMetric.addEventListener("change", readRange);
  minIn.addEventListener("input", readRange);
  maxIn.addEventListener("input", readRange);
  reset.addEventListener("click", () => {
    search.value = ""; statusSel.value = "any"; contraBox.checked = false; rangeMetric.value = "-1";
    minIn.value = ""; maxIn.value = "";
    Object.assign(state, { q: "", status: "any", contradicted: false, rm: -1, min: null, max: null, bin: null });
    markBins();
    refresh();
  });

  // histogram bars (server-drawn SVG) filter by their bin
  const bins = Array.from(document.querySelectorAll(".hist-svg .bin:not(.empty)"));
  function markBins() {
    for (const g of bins) {
      g.classList.toggle("active", state.bin != null && Number(g.dataset.metric) === state.rm && Number(g.dataset.bin) === state.bin);
    }
  }
  function pickBin(g) {
    const m = Number(g.dataset.metric), b = Number(g.dataset.bin);
    if (state.bin === b && state.rm === m) { reset.click(); return; }
    state.rm = m; state.bin = b; state.min = b / BINS; state.max = (b + 1) / BINS;
    rangeMetric.value = String(m); minIn.value = String(state.min); maxIn.value = String(state.max);
    markBins();
    refresh();
    document.getElementById("samples").scrollIntoView({ block: "start" });
  }
  for (const g of bins) {
    g.addEventListener("click", () => pickBin(g));
    g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pickBin(g); } });
  }

  // -- filtering and sorting -------------------------------------------------------------------------
  function keep(i) {
    const row = ROWS[i];
    if (state.contradicted && !contra[i]) return false;
    if (state.status !== "any") {
      const scores = row[R_SCORES];
      if (state.status === "scored") { if (scores.some((s) => s == null)) return false; }
      else if (state.status === "unscored") { if (!scores.some((s) => s == null)) return false; }
      else if (!row[R_STATUS].includes(wantedStatus)) return false;
    }
    if (state.rm >= 0 && (state.bin != null || state.min != null || state.max != null)) {
      const s = row[R_SCORES][state.rm];
      if (s == null) return false;
      if (state.bin != null) { if (binOf(s) !== state.bin) return false; }
      else if ((state.min != null && s < state.min) || (state.max != null && s > state.max)) return false;
    }
    if (state.q && !haystack()[i].includes(state.q)) return false;
    return true;
  }
  const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });
  function sortKey(key) {
    if (key === "index") return (i) => ROWS[i][R_INDEX];
    if (key === "latency") return (i) => ROWS[i][R_LAT];
    if (key === "cost") return (i) => ROWS[i][R_COST];
    if (key === "claims") return (i) => counts[i * 3 + 1] * 1e6 + counts[i * 3 + 2] * 1e3 - counts[i * 3];
    if (key.startsWith("m")) { const m = Number(key.slice(1)); return (i) => ROWS[i][R_SCORES][m]; }
    return null;
  }
  let wantedStatus = -1;
  function refresh(keepScroll) {
    wantedStatus = state.status.startsWith("s:") ? STATUSES.indexOf(state.status.slice(2)) : -1;
    view = [];
    for (let i = 0; i < N; i++) if (keep(i)) view.push(i);
    const dir = state.dir;
    if (state.sort === "id") {
      view.sort((a, b) => dir * collator.compare(ROWS[a][R_ID], ROWS[b][R_ID]) || a - b);
    } else if (state.sort !== "index" || dir !== 1) {
      const k = sortKey(state.sort);
      const vals = new Map(view.map((i) => [i, k(i)]));
      view.sort((a, b) => {
        const x = vals.get(a), y = vals.get(b);
        if (x == null || y == null) return (x == null) - (y == null) || a - b; // no score: always last
        return dir * (x - y) || a - b;
      });
    }
    count.textContent = view.length === N ? `${int(N)} samples` : `Showing ${int(view.length)} of ${int(N)} samples`;
    count.dataset.count = String(view.length);
    for (const th of heads) th.setAttribute("aria-sort", th.dataset.key === state.sort ? (state.dir > 0 ? "ascending" : "descending") : "none");
    if (!keepScroll) wrap.scrollTop = 0;
    renderRows();
    if (!view.includes(state.selected) && view.length) select(view[0], null);
    else if (!view.length) showEmptyDetail();
    else updateNav();
  }

  // -- the table (virtualised: only the rows in sight exist) -------------------------------------------
  let maxIndex = 0;
  for (let i = 0; i < N; i++) if (ROWS[i][R_INDEX] > maxIndex) maxIndex = ROWS[i][R_INDEX];
  // a sortable header's width: its label (bold, 0.82rem) + padding, gap and sort arrow, so none is cut
  const headFont = (() => {
    const root = parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
    return "600 " + (0.82 * root).toFixed(2) + "px " + getComputedStyle(document.body).fontFamily;
  })();
  const measure = document.createElement("canvas").getContext("2d");
  const headWidth = (label) => {
    let text = 8 * label.length;
    if (measure) { measure.font = headFont; text = measure.measureText(label).width; }
    return Math.ceil(text) + 16 + 3 + 14;
  };
  const cols = [
    { key: "index", label: "#", width: 26 + 9 * String(maxIndex).length, cls: "num" },
    { key: "id", label: "ID", width: 96 },
    { key: null, label: "Question", width: null },
    // a metric's header may wrap after each "_" (context_ / precision), so seven metrics fit at 1280 px
    ...METRICS.map((name, m) => ({
      key: "m" + m, label: name.replace(/_/g, "_\u200b"), cls: "metric", title: "Sort by " + name,
      width: Math.max(84, ...name.split(/(?<=_)/).map(headWidth)),
    })),
    { key: "claims", label: "Claims \u2713 \u2717 ?", width: 112, title: primary >= 0 ? "Claims of " + METRICS[primary] + ": supported, contradicted, not found (sorts by contradicted)" : "Claims" },
    { key: "latency", label: "Latency", width: Math.max(76, headWidth("Latency")), cls: "num" },
  ];
  const minWidth = cols.reduce((sum, c) => sum + (c.width || 96), 0);
  // the table's column of the split layout is at least this wide (when the window allows), so the
  // last columns (latency) are not hidden behind a horizontal scroll on a 1400 px screen
  pane.parentElement.style.setProperty("--table-min", minWidth + 2 + 16 + "px"); // borders, scrollbar
  // a table too wide for the split layout's column gets the page's width, the detail below it
  const stackIfWide = () => pane.parentElement.classList.toggle(
    "stacked", minWidth + 18 > 0.66 * (document.documentElement.clientWidth - 48));
  stackIfWide();
  window.addEventListener("resize", stackIfWide);
  const heads = [];
  const colgroup = h("colgroup", null, cols.map((c) => h("col", c.width ? { width: String(c.width) } : null)));
  const headRow = h("tr", null, cols.map((c) => {
    if (!c.key) return h("th", { scope: "col", class: "plain" }, c.label);
    const th = h("th", { scope: "col", "aria-sort": "none", "data-key": c.key, title: c.title || "Sort by " + c.label, class: c.cls === "metric" ? "metric" : null },
      h("button", { type: "button" }, h("span", null, c.label), h("span", { class: "arrow", "aria-hidden": "true" })));
    th.firstChild.addEventListener("click", () => {
      if (state.sort === c.key) state.dir = -state.dir;
      else { state.sort = c.key; state.dir = c.key.startsWith("m") || c.key === "claims" || c.key === "latency" ? -1 : 1; }
      refresh();
    });
    heads.push(th);
    return th;
  }));
  const thead = h("thead", null, headRow);
  const topPad = h("tr", { class: "spacer", "aria-hidden": "true" }, h("td", { colspan: String(cols.length) }));
  const bottomPad = h("tr", { class: "spacer", "aria-hidden": "true" }, h("td", { colspan: String(cols.length) }));
  const tbody = h("tbody", null, topPad, bottomPad);
  const table = h("table", { class: "samples", id: "samples-table", "aria-label": "Samples", "aria-rowcount": String(N + 1) }, colgroup, thead, tbody);
  table.style.minWidth = minWidth + "px";
  const wrap = h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Samples table; arrow keys move between samples" }, table);
  pane.append(wrap);
  let rowH = 35;
  let measured = false;
  let first = 0, last = 0;

  function scoreCell(row, m) {
    const s = row[R_SCORES][m];
    if (s == null) {
      const st = label(STATUSES[row[R_STATUS][m]] || "none");
      return h("td", { class: "score-cell", title: METRICS[m] + ": no score (" + st + ")" }, h("span", { class: "st" }, st));
    }
    const res = row[R_RESULTS][m];
    const fail = res && res[X_PASSED] === false;
    const bar = h("i");
    bar.style.width = Math.round(s * 100) + "%";
    return h("td", { class: "score-cell" + (fail ? " fail" : ""), title: fail ? "below the threshold" : null }, h("span", { class: "sbar", "aria-hidden": "true" }, bar), fmt(s, 2));
  }
  function claimCell(i) {
    if (primary < 0) return h("td");
    const sup = counts[i * 3], con = counts[i * 3 + 1], nf = counts[i * 3 + 2];
    return h("td", { title: `${sup} supported, ${con} contradicted, ${nf} not found` },
      h("span", { class: "cc v-supported", "aria-label": sup + " supported" }, "\u2713" + sup),
      h("span", { class: "cc v-contradicted", "aria-label": con + " contradicted" }, "\u2717" + con),
      h("span", { class: "cc v-not_found", "aria-label": nf + " not found" }, "?" + nf));
  }
  function makeRow(pos) {
    const i = view[pos];
    const row = ROWS[i];
    const tr = h("tr", { class: "row" + (i === state.selected ? " selected" : ""), id: "row-" + i, "data-row": String(i),
      "aria-rowindex": String(pos + 2), "aria-selected": i === state.selected ? "true" : "false" },
      h("td", { class: "num" }, row[R_INDEX]),
      h("td", { class: "idc", title: row[R_ID] }, row[R_ID]),
      h("td", { title: str(row[R_Q]) }, str(row[R_Q]) || "—"),
      METRICS.map((_, m) => scoreCell(row, m)),
      claimCell(i),
      h("td", { class: "num" }, ms(row[R_LAT])));
    return tr;
  }
  function renderRows() {
    const n = view.length;
    const headH = thead.offsetHeight;
    const top = Math.max(0, wrap.scrollTop - headH);
    const height = wrap.clientHeight || 600;
    first = Math.max(0, Math.floor(top / rowH) - 10);
    last = Math.min(n, Math.ceil((top + height) / rowH) + 10);
    while (topPad.nextSibling !== bottomPad) tbody.removeChild(topPad.nextSibling);
    const frag = document.createDocumentFragment();
    for (let p = first; p < last; p++) frag.append(makeRow(p));
    tbody.insertBefore(frag, bottomPad);
    if (!measured && last > first) {
      const got = topPad.nextSibling.getBoundingClientRect().height;
      if (got > 0) { measured = true; if (Math.abs(got - rowH) > 0.5) { rowH = got; renderRows(); return; } }
    }
    topPad.firstChild.style.height = first * rowH + "px";
    bottomPad.firstChild.style.height = (n - last) * rowH + "px";
    if (n === 0) {
      tbody.insertBefore(h("tr", null, h("td", { colspan: String(cols.length), class: "empty-note" }, "No sample matches these filters.")), bottomPad);
    }
  }
  let ticking = false;
  wrap.addEventListener("scroll", () => {
    if (ticking) return;
    ticking = true;
    requestAnimationFrame(() => { ticking = false; renderRows(); });
  }, { passive: true });
  window.addEventListener("resize", () => renderRows());
  tbody.addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr.row");
    if (tr) select(Number(tr.dataset.row), true);
  });
  wrap.addEventListener("keydown", (ev) => {
    if (ev.target !== wrap || !view.length) return;
    const pos = Math.max(0, view.indexOf(state.selected));
    const page = Math.max(1, Math.floor(wrap.clientHeight / rowH) - 2);
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page, Home: -Infinity, End: Infinity };
    if (ev.key in moves) {
      ev.preventDefault();
      const next = Math.min(view.length - 1, Math.max(0, pos + moves[ev.key]));
      select(view[next], false);
      scrollToPos(next);
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      detail.focus();
    }
  });
  function scrollToPos(pos, center) {
    const headH = thead.offsetHeight;
    const y = pos * rowH;
    const visible = wrap.clientHeight - headH;
    if (center) wrap.scrollTop = Math.max(0, y - visible / 2);
    else if (y < wrap.scrollTop) wrap.scrollTop = y;
    else if (y + rowH > wrap.scrollTop + visible) wrap.scrollTop = y + rowH - visible;
    renderRows();
  }

  // -- selection and the detail view -------------------------------------------------------------------
  function select(i, fromClick) {
    state.selected = i;
    for (const tr of tbody.querySelectorAll("tr.row")) {
      const on = Number(tr.dataset.row) === i;
      tr.classList.toggle("selected", on);
      tr.setAttribute("aria-selected", on ? "true" : "false");
    }
    renderDetail(i);
    if (fromClick !== null) {
      try { history.replaceState(null, "", "#sample=" + encodeURIComponent(ROWS[i][R_ID])); } catch (e) { /* some file: URLs refuse */ }
    }
    if (fromClick && window.matchMedia("(max-width: 1179px)").matches) detail.scrollIntoView({ block: "start", behavior: "smooth" });
  }
  function showEmptyDetail() {
    state.selected = -1;
    detail.replaceChildren(h("p", { class: "placeholder" }, "No sample matches these filters."));
  }

  const RANK = { contradicted: 6, not_found: 5, supported: 4, off_topic: 3, supporting: 2, direct: 1 };
  function claimClass(c, useVerdict) {
    if (useVerdict && c[C_VERDICT]) return "v-" + VERDICTS[c[C_VERDICT]];
    if (c[C_REL]) return "r-" + RELEVANCE[c[C_REL]];
    return "";
  }
  // text with marks over [start, end) ranges; overlapping ranges split into segments shown by the gravest class
  function highlight(text, ranges, extra) {
    if (!ranges.length) return [text];
    const cuts = new Set([0, text.length]);
    for (const r of ranges) { cuts.add(r.s); cuts.add(r.e); }
    const points = Array.from(cuts).filter((p) => p >= 0 && p <= text.length).sort((a, b) => a - b);
    const out = [];
    for (let k = 0; k + 1 < points.length; k++) {
      const a = points[k], b = points[k + 1];
      if (a === b) continue;
      const over = ranges.filter((r) => r.s <= a && r.e >= b);
      const piece = text.slice(a, b);
      if (!over.length) { out.push(piece); continue; }
      over.sort((x, y) => (RANK[y.cls.slice(2)] || 0) - (RANK[x.cls.slice(2)] || 0));
      const top = over[0];
      const nums = over.map((r) => "#" + r.claim).join(", ");
      // text one claim is supported by and another contradicted by is both: drawn mixed, not just red
      const mixed = over.some((r) => r.cls === "v-supported") && over.some((r) => r.cls === "v-contradicted");
      const what = mixed ? "mixed (" + over.map((r) => "#" + r.claim + " " + label(r.cls.slice(2))).join(", ") + ")" : label(top.cls.slice(2));
      const mark = h("mark", { class: "hl " + (mixed ? "v-mixed" : top.cls) + (extra ? " " + extra : ""), "data-claim": String(top.claim),
        title: (over.length > 1 ? "claims " : "claim ") + nums + ": " + what, tabindex: extra ? null : "0" }, piece);
      out.push(mark);
    }
    return out;
  }

  function renderDetail(i) {
    const row = ROWS[i];
    const answer = str(row[R_A]);
    const contexts = row[R_CTX].map(str);
    const prev = h("button", { type: "button", class: "btn", id: "d-prev", "aria-label": "Previous sample" }, "‹ Prev");
    const next = h("button", { type: "button", class: "btn", id: "d-next", "aria-label": "Next sample" }, "Next ›");
    prev.addEventListener("click", () => step(-1));
    next.addEventListener("click", () => step(1));
    const head = h("div", { class: "detail-head" },
      h("h3", null, row[R_ID], h("span", { class: "idx" }, "row " + row[R_INDEX])), prev, next);
    const parts = [head];
    const rowErrors = row[R_ERRORS].filter((e) => e[0] == null);
    for (const e of rowErrors) parts.push(errorBox(e));
    parts.push(h("div", { class: "block" }, h("h4", null, "Question"), h("p", { class: "text", id: "d-question" }, str(row[R_Q]) || "(none)")));
    const refHead = h("h4", null, "Reference answer");
    const refEl = h("p", { class: "text", id: "d-reference" }, str(row[R_REF]));
    if (row[R_REF] >= 0) parts.push(h("div", { class: "block" }, refHead, refEl));
    const facts = [["Latency", ms(row[R_LAT])], ["Cost", money(row[R_COST])]];
    parts.push(h("dl", { class: "kv" }, facts.map(([k, v]) => [h("dt", null, k), h("dd", null, v)])));

    // metric tabs
    const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Metrics" });
    const panel = h("div", { class: "tabpanel", role: "tabpanel", id: "d-panel", tabindex: "0" });
    const tabEls = METRICS.map((name, m) => {
      const s = row[R_SCORES][m];
      const tab = h("button", { type: "button", role: "tab", class: "tab", id: "tab-" + m, "aria-controls": "d-panel",
        "aria-selected": m === state.tab ? "true" : "false", tabindex: m === state.tab ? "0" : "-1" },
        h("span", null, name), h("span", { class: "ts" }, s == null ? label(STATUSES[row[R_STATUS][m]]) : fmt(s, 2)));
      tab.addEventListener("click", () => { state.tab = m; renderDetail(i); document.getElementById("tab-" + m).focus(); });
      tab.addEventListener("keydown", (ev) => {
        const d = ev.key === "ArrowRight" ? 1 : ev.key === "ArrowLeft" ? -1 : 0;
        if (d) { ev.preventDefault(); state.tab = (m + d + NM) % NM; renderDetail(i); document.getElementById("tab-" + state.tab).focus(); }
      });
      return tab;
    });
    tabs.append(...tabEls);
    panel.setAttribute("aria-labelledby", "tab-" + state.tab);
    parts.push(tabs, panel);
    const m = Math.min(state.tab, NM - 1);
    const res = row[R_RESULTS][m];
    fillPanel(panel, row, m, res, answer, contexts, { head: refHead, el: refEl });
    detail.replaceChildren(...parts);
    updateNav();
  }
  function step(d) { // the previous or next sample in the table's current order
    const pos = view.indexOf(state.selected) + d;
    if (pos < 0 || pos >= view.length) return;
    select(view[pos], false);
    scrollToPos(pos);
    document.getElementById(d < 0 ? "d-prev" : "d-next").focus();
  }
  function updateNav() {
    const pos = view.indexOf(state.selected);
    const prev = document.getElementById("d-prev"), next = document.getElementById("d-next");
    if (prev) prev.disabled = pos <= 0;
    if (next) next.disabled = pos < 0 || pos >= view.length - 1;
  }

  function errorBox(e) {
    return h("div", { class: "callout", role: "alert" },
      h("strong", null, (e[0] ? e[0] + ": " : "row: ") + label(e[1])), " ", e[3] ? "(" + e[3] + ") " : "", str(e[2]),
      e[5] ? h("div", null, "field: ", h("code", null, e[5])) : null,
      e[4] >= 0 ? h("details", null, h("summary", null, "Traceback"), h("pre", null, str(e[4]))) : null);
  }

  // the claims' spans highlighted in ``el`` (the answer or the reference); a mark opens its claim
  function claimText(el, text, spans, panel) {
    el.replaceChildren(...highlight(text, spans));
    el.addEventListener("click", (ev) => {
      const mark = ev.target.closest("mark[data-claim]");
      if (mark) focusClaim(panel, Number(mark.dataset.claim));
    });
    el.addEventListener("keydown", (ev) => {
      const mark = ev.target.closest("mark[data-claim]");
      if (mark && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); focusClaim(panel, Number(mark.dataset.claim)); }
    });
  }

  function fillPanel(panel, row, m, res, answer, contexts, ref) {
    const name = METRICS[m];
    const metricErrors = row[R_ERRORS].filter((e) => e[0] === name);
    const status = STATUSES[row[R_STATUS][m]] || "missing";
    const score = row[R_SCORES][m];
    const line = h("div", { class: "scoreline" },
      h("span", { class: "big" }, fmt(score)),
      h("span", { class: "badge " + (status === "ok" ? "ok" : "warn") }, label(status)));
    if (res && res[X_PASSED] != null) line.append(h("span", { class: "badge " + (res[X_PASSED] ? "ok" : "fail") }, (res[X_PASSED] ? "passed" : "failed") + (res[X_THRESHOLD] != null ? " at ≥ " + res[X_THRESHOLD] : "")));
    if (res) {
      const judge = JUDGES[res[X_JUDGE]];
      const u = res[X_USAGE];
      line.append(h("span", null, "latency " + ms(res[X_LAT])), h("span", null, money(u[4])),
        h("span", null, `${u[0]} call${u[0] === 1 ? "" : "s"}` +
          (u[5] || u[6] ? ` (${u[5] || 0} re-ask${u[5] === 1 ? "" : "s"}, ${u[6] || 0} retr${u[6] === 1 ? "y" : "ies"})` : "") +
          `, ${u[1]} cached, ${int(u[2] + u[3])} tokens` + (u[7] ? `, ${u[7]} unmetered` : "")));
      if (judge) line.append(h("span", null, "judge " + (judge[2] ? judge[0] + " (heuristic)" : judge[0])));
    }
    panel.append(line);
    if (res && res[X_MSG] >= 0) panel.append(h("div", { class: "callout info" }, h("strong", null, label(status) + ": "), str(res[X_MSG])));
    for (const e of metricErrors) panel.append(errorBox(e));
    if (!res) {
      if (!metricErrors.length) panel.append(h("p", { class: "placeholder" }, "This metric returned no record for this sample."));
      return;
    }
    if (res[X_REASONING] >= 0) panel.append(h("p", { class: "reasoning" }, str(res[X_REASONING])));
    const spread = row[R_SPREAD] && row[R_SPREAD][name];
    if (spread) panel.append(h("p", { class: "claim-reason" }, "Repeats: " + spread.map((s) => fmt(s, 2)).join(", ")));

    const claims = res[X_CLAIMS];
    const useVerdict = claims.some((c) => c[C_VERDICT] > 0);
    const spans = [];
    claims.forEach((c, k) => {
      const cls = claimClass(c, useVerdict);
      if (c[C_S0] >= 0 && cls) spans.push({ s: c[C_S0], e: c[C_S1], cls, claim: k });
    });
    const split = SPLITS[res[X_SPLIT]] || "answer";
    const source = split === "reference" ? str(row[R_REF]) : answer; // the text the claims' spans are in
    const counted = claims.length ? ` — ${claims.length} claim${claims.length === 1 ? "" : "s"}` : "";
    const answerEl = h("p", { class: "text answer", id: "d-answer" }, answer || h("em", null, "(empty answer)"));
    if (split === "answer") {
      if (answer) claimText(answerEl, answer, spans, panel);
    } else if (row[R_REF] >= 0) { // the reference's claims: highlighted in the reference block above
      claimText(ref.el, source, spans, panel);
      ref.head.textContent = "Reference answer" + (counted ? counted + " of " + METRICS[m] : "");
      ref.el.classList.add("claimed");
    }
    const answerHead = split === "answer" ? "Answer" + counted : "Answer (" + METRICS[m] + " splits the reference)";
    panel.append(h("div", { class: "block" }, h("h4", null, answerHead), answerEl));

    if (claims.length) {
      const list = h("ol", { class: "claims", id: "d-claims" });
      claims.forEach((c, k) => list.append(claimItem(c, k, useVerdict, source, split, contexts)));
      panel.append(h("div", { class: "block" }, h("h4", null, "Claims"), list));
    }
    const obj = res[X_DETAILS];
    if (obj && typeof obj === "object" && Object.keys(obj).length) {
      panel.append(h("div", { class: "block" }, h("h4", null, "Details"), h("dl", { class: "kv" },
        Object.keys(obj).map((k) => [h("dt", null, label(k)), h("dd", null, obj[k] !== null && typeof obj[k] === "object" ? JSON.stringify(obj[k]) : String(obj[k]))]))));
    }
    if (contexts.length) {
      const byCtx = contexts.map(() => []);
      claims.forEach((c, k) => {
        const cls = claimClass(c, useVerdict);
        if (c[C_E0] >= 0 && byCtx[c[C_CTX]]) byCtx[c[C_CTX]].push({ s: c[C_E0], e: c[C_E1], cls: cls || "v-supported", claim: k });
      });
      const list = h("div", { id: "d-contexts" });
      const verdicts = contextVerdicts(res[X_CTXV]);
      const tally = contexts.map(() => [0, 0]); // per context: claims it supports, claims it contradicts
      if (useVerdict) claims.forEach((c) => { if (tally[c[C_CTX]] && (c[C_VERDICT] === 1 || c[C_VERDICT] === 2)) tally[c[C_CTX]][c[C_VERDICT] - 1] += 1; });
      contexts.forEach((text, k) => {
        const box = contextBlock(text, k, byCtx[k], tally[k]);
        if (verdicts) addContextVerdict(box, verdicts.get(k), panel, claims.length, tracksUse(verdicts));
        list.append(box);
      });
      const block = h("div", { class: "block" }, h("h4", null, `Retrieved contexts (${contexts.length})`));
      if (verdicts) block.append(contextSummary(verdicts, contexts.length));
      block.append(list);
      if (verdicts) {
        const stray = [...verdicts.keys()].filter((k) => k >= contexts.length).sort((a, b) => a - b);
        if (stray.length) block.append(h("p", { class: "unlocated", id: "d-ctx-stray" }, "The metric judged context" + (stray.length === 1 ? " " : "s ") + stray.join(", ") + ", which this sample does not have."));
      }
      panel.append(block);
    }
    if (res[X_SIG] >= 0) panel.append(h("p", { class: "sig" }, str(res[X_SIG])));
  }

  function focusClaim(panel, k) {
    const li = panel.querySelector(`li[data-claim="${k}"]`);
    if (!li) return;
    li.scrollIntoView({ block: "nearest", behavior: "smooth" });
    li.classList.add("flash");
    li.focus({ preventScroll: true });
    setTimeout(() => li.classList.remove("flash"), 1200);
  }

  function claimItem(c, k, useVerdict, source, split, contexts) { // source: the split text (answer or reference)
    const verdict = VERDICTS[c[C_VERDICT]];
    const rel = RELEVANCE[c[C_REL]];
    const text = c[C_TEXT] >= 0 ? str(c[C_TEXT]) : source.slice(c[C_S0], c[C_S1]);
    const headBits = [h("span", { class: "n", title: "claim " + k + " (numbered from 0, as in the judge's reasons)" }, "#" + k)];
    if (verdict) headBits.push(h("span", { class: "badge v-" + verdict }, label(verdict)));
    if (rel) headBits.push(h("span", { class: "badge r-" + rel, title: "relevance to the question" }, "relevance: " + label(rel)));
    if (c[C_VERIFIED] === 1) headBits.push(h("span", { class: "badge ok", title: "the quote was found in the cited context" }, "quote verified"));
    if (c[C_VERIFIED] === 0) headBits.push(h("span", { class: "badge warn", title: "the quote was not found in the cited context" }, "quote not verified"));
    const li = h("li", { class: "claim " + (useVerdict && verdict ? "v-" + verdict : ""), "data-claim": String(k), tabindex: "-1" },
      h("div", { class: "claim-head" }, headBits),
      h("p", { class: "claim-text" }, text));
    if (c[C_S0] < 0) {
      const span = str(c[C_SPAN]);
      li.append(h("p", { class: "unlocated" }, span ? "Span not found in the " + split + ": “" + span + "”" : "No " + split + " span given for this claim."));
    }
    if (c[C_REASON] >= 0) li.append(h("p", { class: "claim-reason" }, str(c[C_REASON])));
    const ci = c[C_CTX];
    const hasQuote = c[C_E0] >= 0 || c[C_QUOTE] >= 0;
    if (ci >= 0 || hasQuote) {
      const ev = h("div", { class: "evidence" });
      const ctxText = contexts[ci];
      const where = ci >= 0 ? (ctxText != null ? "Evidence from context " + ci : "Cites context " + ci + ", which does not exist") : "Evidence";
      const headEl = h("p", { class: "evidence-h" }, h("span", null, where));
      ev.append(headEl);
      if (c[C_E0] >= 0 && ctxText != null) {
        const cls = useVerdict && verdict ? "v-" + verdict : "v-supported";
        const excerpt = h("p", { class: "excerpt" });
        const show = (whole) => {
          const a = whole ? 0 : Math.max(0, c[C_E0] - 220), b = whole ? ctxText.length : Math.min(ctxText.length, c[C_E1] + 220);
          const s = whole ? 0 : snap(ctxText, a, -1), e = whole ? ctxText.length : snap(ctxText, b, 1);
          excerpt.replaceChildren(s > 0 ? "… " : "", ...highlight(ctxText.slice(s, e), [{ s: c[C_E0] - s, e: c[C_E1] - s, cls, claim: k }], "quote"), e < ctxText.length ? " …" : "");
        };
        show(false);
        if (ctxText.length > c[C_E1] - c[C_E0] + 440) {
          let whole = false;
          const toggle = h("button", { type: "button", class: "linkish", "aria-expanded": "false" }, "show whole passage");
          toggle.addEventListener("click", () => { whole = !whole; show(whole); toggle.textContent = whole ? "show excerpt" : "show whole passage"; toggle.setAttribute("aria-expanded", String(whole)); });
          headEl.append(toggle);
        }
        ev.append(excerpt);
      } else if (c[C_QUOTE] >= 0) {
        ev.append(h("p", { class: "excerpt quote-only" }, "“" + str(c[C_QUOTE]) + "”"),
          h("p", { class: "unlocated" }, ctxText != null ? "This quote was not found verbatim in context " + ci + "." : "No context to check this quote against."));
      }
      li.append(ev);
    }
    return li;
  }
  function snap(text, p, dir) { // move an excerpt edge to a word boundary (at most 30 chars)
    for (let k = 0; k < 30 && p > 0 && p < text.length; k++, p += dir) if (/\s/.test(text[p])) return dir < 0 ? p + 1 : p;
    return p;
  }
  // -- per-context verdicts of the retrieval metrics: relevant to the question, used by which claims --
  function contextVerdicts(view) {
    if (!Array.isArray(view) || !view.length) return null;
    const out = new Map();
    for (const v of view) if (!out.has(v[V_INDEX])) out.set(v[V_INDEX], v);
    return out;
  }
  // a metric that judges relevance only (context_relevancy) lists no supports: it says nothing about use
  const tracksUse = (verdicts) => [...verdicts.values()].some((v) => v[V_SUPPORTS].length || v[V_REL] < 0);
  function contextSummary(verdicts, n) {
    const seen = [...verdicts.values()].filter((v) => v[V_INDEX] < n);
    const judged = seen.filter((v) => v[V_REL] >= 0);
    const bits = [];
    if (judged.length) bits.push(`${judged.filter((v) => v[V_REL] === 1).length} of ${judged.length} judged relevant`);
    const used = seen.filter((v) => v[V_SUPPORTS].length).length;
    if (tracksUse(verdicts)) bits.push(`${used} of ${seen.length} support a claim`);
    return h("p", { class: "ctx-summary", id: "d-ctx-summary" }, "This metric: " + bits.join("; ") + ".");
  }
  function addContextVerdict(box, v, panel, nClaims, useKnown) {
    const head = h("div", { class: "ctx-v" });
    if (!v) {
      head.append(h("span", { class: "badge" }, "not judged by this metric"));
      box.insertBefore(head, box.children[1]);
      return;
    }
    if (v[V_REL] === 1) head.append(h("span", { class: "badge ok" }, "relevant"));
    else if (v[V_REL] === 0) head.append(h("span", { class: "badge warn" }, "not relevant"));
    const sup = v[V_SUPPORTS];
    if (sup.length) {
      const used = h("span", { class: "ctx-used" }, "supports claim" + (sup.length === 1 ? " " : "s "));
      sup.forEach((c, j) => {
        if (j) used.append(", ");
        if (c < nClaims) {
          const link = h("button", { type: "button", class: "claim-link", "data-claim": String(c), title: "show claim " + c }, "#" + c);
          link.addEventListener("click", () => focusClaim(panel, c));
          used.append(link);
        } else used.append(h("span", { title: "no such claim in this result" }, "#" + c));
      });
      head.append(used);
      box.classList.add("c-used");
    } else if (useKnown) {
      head.append(h("span", { class: "badge" }, "supports no claim"));
      box.classList.add("c-unused");
    }
    box.insertBefore(head, box.children[1]);
    if (v[V_REASON] >= 0) box.insertBefore(h("p", { class: "ctx-reason" }, str(v[V_REASON])), box.children[2]);
  }
  // a context's edge and note say what the claims citing it found: supports (green), contradicts (red), or both (mixed)
  function contextBlock(text, k, ranges, tally) {
    const long = text.length > 700;
    const [sup, con] = tally;
    const use = sup && con ? "c-mixed" : sup ? "c-supports" : con ? "c-contradicts" : "";
    const said = [sup ? "supports " + sup : "", con ? "contradicts " + con : ""].filter(Boolean).join(", ");
    const body = h("p", { class: "text" }, highlight(text, ranges, "quote"));
    const headEl = h("p", { class: "ctx-h" }, h("strong", null, "Context " + k), h("span", null, int(text.length) + " chars"),
      h("span", null, ranges.length ? ranges.length + " quote" + (ranges.length === 1 ? "" : "s") + " cited" : "not cited"),
      said ? h("span", { class: "ctx-tally " + use, title: "claims citing this context: " + (sup ? sup + " supported" : "") + (sup && con ? ", " : "") + (con ? con + " contradicted" : "") }, (sup && con ? "mixed: " : "") + said) : null);
    const box = h("article", { class: "ctx" + (long ? " clamped" : "") + (use ? " " + use : ""), "data-context": String(k) }, headEl, body);
    if (long) {
      const toggle = h("button", { type: "button", class: "linkish", "aria-expanded": "false" }, "show all");
      toggle.addEventListener("click", () => {
        const open = box.classList.toggle("clamped") === false;
        toggle.textContent = open ? "show less" : "show all";
        toggle.setAttribute("aria-expanded", String(open));
      });
      headEl.append(toggle);
    }
    return box;
  }

  // -- start -------------------------------------------------------------------------------------------
  function done() {
    window.__rmRenderMs = performance.now() - t0;
    // read-only hooks for scripts and tests: the sample ids in table order
    window.ragmetricsReport = Object.freeze({ order: () => view.map((i) => ROWS[i][R_ID]), renderMs: window.__rmRenderMs });
    document.documentElement.setAttribute("data-ready", "1");
  }
  // a row opened in the detail view from elsewhere on the page (a conversation's turn), its filters
  // cleared first if they hide it
  function openSample(i) {
    if (!view.includes(i)) reset.click();
    select(i, true);
    scrollToPos(view.indexOf(i), true);
    detail.scrollIntoView({ block: "start" });
    detail.focus({ preventScroll: true });
  }
  // conversations: conversations.js (run before this script) draws each one as a transcript in
  // #conv-list, with these helpers and the data's positions, so both views read the data alike
  if (D.conversations && D.conversations.length && typeof window.ragmetricsConversationView === "function") {
    window.ragmetricsConversationView(Object.freeze({
      D, h, str, label, fmt, highlight, claimClass, primary, openSample,
      at: { R_ID, R_Q, R_A, R_CTX, R_SCORES, R_STATUS, R_RESULTS, R_ERRORS, X_CLAIMS, X_STATUS, X_PASSED,
        C_TEXT, C_S0, C_S1, C_VERDICT, C_CTX, C_E0, C_E1, C_QUOTE, C_VERIFIED, C_REASON },
      VERDICTS,
    }));
  }
  refresh();
  const wanted = /^#sample=(.*)$/.exec(location.hash);
  if (wanted) {
    const id = decodeURIComponent(wanted[1]);
    const i = ROWS.findIndex((r) => r[R_ID] === id);
    if (i >= 0) { select(i, null); scrollToPos(view.indexOf(i), true); }
  }
  done();
})();
