/* ragmetrics HTML report: each conversation of the run as a transcript (issue 41).
 * Runs before report.js, which calls window.ragmetricsConversationView(kit) at start-up with its DOM helper
 * (h: text children only), its highlighter and the data's positions. Every value from the data reaches
 * the page as text (text nodes, textContent, setAttribute), never as markup: message text is untrusted.
 * Data: D.conversations, laid out in ragmetrics/report/_conversations.py.
 *
 * What it draws in #conv-list:
 *   article.conv#conv-K                        conversation K (in the order of its first turn)
 *     .conv-h          its id, turn count; .conv-tools: tool-call metric scores, reasoning, what was wrong;
 *                      .conv-whole: the conversation-level metrics' scores (its own record), when run;
 *                      p.callout: why the conversation was refused, when it was
 *     .conv-body > ol.transcript   drawn at once for the first 20 conversations, else on "Show the transcript"
 *       li.msg.role-R#conv-K-m-I               message I, in order (user, assistant, system, tool)
 *         .msg-h       role, tool name and call id, message index
 *         .turn-scores (an assistant turn) per-metric scores, status when not ok, "open in the table"
 *         p.text       the content: a turn's claims highlighted (mark[data-claim]); elsewhere the quotes
 *                      that claims cite, marked (mark.cite[data-quotes="ROW:CLAIM ..."])
 *         details.tool-result   a tool message's content, collapsed
 *         details.tool-call     each call the message makes: name, JSON arguments, collapsed
 *         details.msg-contexts  the message's retrieved contexts (p#conv-K-m-I-c-J), collapsed
 *         ol.turn-claims        a turn's claims: verdict, text, and a link to the message its quote cites
 * A quote link opens the collapsed blocks around its target, scrolls to it, marks the message
 * (li.msg-target) and the quote (mark.cite.active).
 */
window.ragmetricsConversationView = (kit) => {
  "use strict";
  const { D, h, str, label, fmt, highlight, claimClass, primary, openSample, at, VERDICTS } = kit;
  const list = document.getElementById("conv-list");
  if (!list) return;
  const ROWS = D.rows, METRICS = D.metrics, STATUSES = D.statuses;
  // conversation, message, tool call, tool metric and turn positions (see _conversations.py)
  const V_ID = 0, V_MSGS = 1, V_TOOLS = 2, V_TURNS = 3, V_REFUSED = 4, V_WHOLE = 5;
  const M_ROLE = 0, M_CONTENT = 1, M_CALLS = 2, M_CALL_ID = 3, M_NAME = 4, M_CTX = 5;
  const K_ID = 0, K_NAME = 1, K_ARGS = 2;
  const T_NAME = 0, T_SCORE = 1, T_STATUS = 2, T_REASONING = 3, T_DETAILS = 4;
  const U_ROW = 0, U_NUMBER = 1, U_MESSAGE = 2, U_SOURCES = 3;
  const ROLES = new Set(["system", "user", "assistant", "tool"]);
  const WRONG = ["missing", "unexpected", "wrong_arguments", "out_of_order"]; // tool metrics' findings
  const RANK = { contradicted: 3, not_found: 2, supported: 1 };
  const plural = (n, word) => n + " " + word + (n === 1 ? "" : "s");
  const EAGER = 20; // conversations whose transcripts are drawn at start-up (the rest on a click)
  const shown = []; // per conversation: draws its transcript if not yet drawn

  // the metric whose claims a turn shows: the report's primary verdict metric, else the first with claims
  function claimsOf(row) {
    const results = row[at.R_RESULTS];
    if (primary >= 0 && results[primary] && results[primary][at.X_CLAIMS].length) return { m: primary, res: results[primary] };
    const m = results.findIndex((r) => r && r[at.X_CLAIMS].length);
    return m >= 0 ? { m, res: results[m] } : null;
  }

  // text with the cited quotes marked; ranges [{s, e, key, cls}] may overlap: a segment lists every quote on it
  function quoteMarks(text, ranges) {
    if (!ranges || !ranges.length) return [text];
    const cuts = new Set([0, text.length]);
    for (const r of ranges) { cuts.add(r.s); cuts.add(r.e); }
    const points = [...cuts].filter((p) => p >= 0 && p <= text.length).sort((a, b) => a - b);
    const out = [];
    for (let k = 0; k + 1 < points.length; k++) {
      const a = points[k], b = points[k + 1];
      const over = ranges.filter((r) => r.s <= a && r.e >= b);
      if (!over.length) { out.push(text.slice(a, b)); continue; }
      over.sort((x, y) => (RANK[y.cls.slice(2)] || 0) - (RANK[x.cls.slice(2)] || 0));
      out.push(h("mark", { class: "hl cite " + over[0].cls, "data-quotes": over.map((r) => r.key).join(" "),
        title: "quoted by " + over.map((r) => r.who).join("; ") }, text.slice(a, b)));
    }
    return out;
  }

  // "messages[1].tool_calls[0]" as [1, 0] (a tool metric's finding), else null
  function callAt(path) {
    const got = typeof path === "string" && /^messages\[(\d+)\]\.tool_calls\[(\d+)\]$/.exec(path);
    return got ? [Number(got[1]), Number(got[2])] : null;
  }

  // the message (or one of its contexts) a quote link targets: open what hides it, scroll, mark
  function goTo(K, mi, ci, key) {
    shown[K]();
    const li = document.getElementById(`conv-${K}-m-${mi}`);
    if (!li) return;
    // the message's content (a tool result's block) or the cited context, and the quote's marks in it
    const target = ci >= 0 ? document.getElementById(`conv-${K}-m-${mi}-c-${ci}`) || li
      : li.querySelector(":scope > details.tool-result > p") || li;
    const marks = key ? [...target.querySelectorAll("mark.cite")].filter((m) => m.dataset.quotes.split(" ").includes(key)) : [];
    for (const el of [target, ...marks]) {
      for (let d = el.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
    }
    for (const el of document.querySelectorAll("#conv-list .msg-target")) el.classList.remove("msg-target");
    for (const el of document.querySelectorAll("#conv-list mark.cite.active")) el.classList.remove("active");
    li.classList.add("msg-target");
    for (const m of marks) m.classList.add("active");
    (marks[0] || target).scrollIntoView({ block: "center" });
    li.focus({ preventScroll: true });
  }

  // an error record of a turn or of the whole conversation: metric (or none), status, message
  const errorNote = (e) => h("p", { class: "callout" }, h("strong", null, (e[0] ? e[0] + ": " : "") + label(e[1]) + " "), str(e[2]));

  // the conversation-level metrics' scores, from the conversation's own record at row position pos
  function wholeScores(pos) {
    const line = turnScores(ROWS[pos], pos);
    line.className = "turn-scores conv-whole";
    line.setAttribute("aria-label", "Scores of the whole conversation");
    line.prepend(h("span", { class: "conv-n" }, "whole conversation:"));
    return line;
  }

  function turnScores(row, pos) {
    const line = h("div", { class: "turn-scores" });
    METRICS.forEach((name, m) => {
      const s = row[at.R_SCORES][m];
      const status = STATUSES[row[at.R_STATUS][m]] || "missing";
      if (status === "not_applicable") return; // a metric of the whole conversation (or of its turns only)
      const res = row[at.R_RESULTS][m];
      const fail = res && res[at.X_PASSED] === false;
      line.append(h("span", { class: "chip" + (status !== "ok" ? " warn" : fail ? " fail" : ""), "data-metric": name,
        title: name + (status !== "ok" ? ": " + label(status) : "") },
      name + " ", h("b", null, s == null ? label(status) : fmt(s, 2)), s != null && status !== "ok" ? " (" + label(status) + ")" : ""));
    });
    const open = h("button", { type: "button", class: "btn open-turn", title: "Open this turn in the sample detail" }, "Open in table");
    open.addEventListener("click", () => openSample(pos));
    line.append(open);
    return line;
  }

  function toolCall(call, j, wrong) {
    const flag = wrong.get(j);
    return h("details", { class: "tool-call" + (flag ? " tc-wrong" : "") },
      h("summary", null, h("span", { class: "tc-kind" }, "Tool call"), " ", h("code", null, call[K_NAME]),
        call[K_ID] ? h("span", { class: "tc-id" }, call[K_ID]) : null,
        flag ? h("span", { class: "badge fail" }, flag) : null),
      h("pre", { class: "tc-args" }, call[K_ARGS]));
  }

  function toolMetrics(tools, K) {
    if (!tools.length) return null;
    const box = h("div", { class: "conv-tools" }, h("h4", null, "Tool calls"));
    for (const t of tools) {
      const item = h("div", { class: "tool-metric", "data-metric": t[T_NAME] },
        h("span", { class: "chip" + (t[T_STATUS] !== "ok" ? " warn" : "") }, t[T_NAME] + " ", h("b", null, t[T_SCORE] == null ? label(t[T_STATUS]) : fmt(t[T_SCORE], 2))),
        t[T_REASONING] >= 0 ? h("span", { class: "reasoning" }, " " + str(t[T_REASONING])) : null);
      const details = t[T_DETAILS] || {};
      for (const key of WRONG) {
        const found = details[key];
        if (!Array.isArray(found) || !found.length) continue;
        const ul = h("ul", { class: "tool-wrong" });
        for (const f of found) {
          const where = f && callAt(f.at);
          const li = h("li", null, h("strong", null, label(key) + ": "),
            f && typeof f === "object" ? (f.name ? f.name + " " : "") + (f.expected !== undefined ? "expected " + JSON.stringify(f.expected) + ", got " + JSON.stringify(f.actual) : JSON.stringify(f)) : String(f));
          if (where) {
            const link = h("button", { type: "button", class: "linkish", title: "show the call in the transcript" }, f.at);
            link.addEventListener("click", () => {
              goTo(K, where[0], -1, null);
              const call = document.querySelectorAll(`#conv-${K}-m-${where[0]} details.tool-call`)[where[1]];
              if (call) call.open = true;
            });
            li.append(" ", link);
          }
          ul.append(li);
        }
        item.append(ul);
      }
      box.append(item);
    }
    return box;
  }

  // the transcript of conversation K (built when first shown)
  function transcriptOf(conv, K) {
    const turns = conv[V_TURNS];
    let msgs = conv[V_MSGS];
    const kept = msgs != null;
    if (!kept) { // records without the messages: each turn's question and answer only
      msgs = [];
      for (const t of turns) {
        const row = ROWS[t[U_ROW]];
        if (row[at.R_Q] >= 0) msgs.push(["user", row[at.R_Q], [], null, null, []]);
        t.shown = msgs.length;
        msgs.push(["assistant", row[at.R_A], [], null, null, []]);
      }
    }
    const byMessage = new Map(turns.map((t) => [kept ? t[U_MESSAGE] : t.shown, t]));
    // each turn's claims, and where each claim's quote sits among the messages
    const targets = new Map(); // "message:context" -> quote ranges
    const claimsByTurn = new Map();
    for (const t of turns) {
      const row = ROWS[t[U_ROW]];
      const got = claimsOf(row);
      if (!got) continue;
      const contexts = row[at.R_CTX].map(str);
      const useVerdict = got.res[at.X_CLAIMS].some((c) => c[at.C_VERDICT] > 0);
      const links = got.res[at.X_CLAIMS].map((c, k) => {
        const ci = c[at.C_CTX];
        const src = kept && ci >= 0 ? t[U_SOURCES][ci] : null;
        if (!src || src[0] < 0 || !msgs[src[0]]) return null;
        const [mi, cj] = src;
        const text = cj < 0 ? str(msgs[mi][M_CONTENT]) : str((msgs[mi][M_CTX] || [])[cj]);
        const ctx = contexts[ci] || "";
        const quote = c[at.C_E0] >= 0 ? ctx.slice(c[at.C_E0], c[at.C_E1]) : str(c[at.C_QUOTE]);
        let s = -1, e = -1;
        if (c[at.C_E0] >= 0 && ctx === text) { s = c[at.C_E0]; e = c[at.C_E1]; }
        else if (quote && (s = text.indexOf(quote)) >= 0) e = s + quote.length;
        const key = t[U_ROW] + ":" + k;
        const cls = claimClass(c, useVerdict) || "v-supported";
        if (s >= 0) {
          const where = mi + ":" + cj;
          if (!targets.has(where)) targets.set(where, []);
          targets.get(where).push({ s, e, key, cls, who: "turn " + t[U_NUMBER] + " claim #" + k });
        }
        return { mi, cj, key, quote, found: s >= 0 };
      });
      claimsByTurn.set(t, { ...got, useVerdict, links, answer: str(row[at.R_A]) });
    }
    // tool calls a tool metric found wrong, by message: call index -> what was wrong
    const wrongCalls = new Map();
    for (const tm of conv[V_TOOLS]) {
      for (const key of WRONG) {
        for (const f of (tm[T_DETAILS] || {})[key] || []) {
          const where = f && callAt(f.at);
          if (!where) continue;
          if (!wrongCalls.has(where[0])) wrongCalls.set(where[0], new Map());
          wrongCalls.get(where[0]).set(where[1], label(key));
        }
      }
    }

    const transcript = h("ol", { class: "transcript", "aria-label": "Transcript of " + conv[V_ID] });
    msgs.forEach((msg, i) => {
      const role = ROLES.has(msg[M_ROLE]) ? msg[M_ROLE] : "other";
      const turn = byMessage.get(i);
      const li = h("li", { class: "msg role-" + role + (turn ? " is-turn" : ""), id: `conv-${K}-m-${i}`, "data-message": String(i), tabindex: "-1" });
      const who = [h("span", { class: "role" }, msg[M_ROLE])];
      if (msg[M_NAME]) who.push(h("code", null, msg[M_NAME]));
      if (msg[M_CALL_ID]) who.push(h("span", { class: "tc-id", title: "answers tool call" }, msg[M_CALL_ID]));
      if (turn) who.push(h("span", { class: "turn-n" }, "turn " + turn[U_NUMBER]));
      if (kept) who.push(h("span", { class: "msg-i" }, "messages[" + i + "]"));
      li.append(h("div", { class: "msg-h" }, who));
      const text = str(msg[M_CONTENT]);
      const info = turn && claimsByTurn.get(turn);
      if (turn) {
        const row = ROWS[turn[U_ROW]];
        li.append(turnScores(row, turn[U_ROW]));
        for (const e of row[at.R_ERRORS]) li.append(errorNote(e));
      }
      if (info) { // the answer with this turn's claims highlighted (offsets in the row's answer)
        const answer = info.answer;
        const spans = [];
        info.res[at.X_CLAIMS].forEach((c, k) => {
          const cls = claimClass(c, info.useVerdict);
          if (c[at.C_S0] >= 0 && cls) spans.push({ s: c[at.C_S0], e: c[at.C_S1], cls, claim: k });
        });
        const p = h("p", { class: "text answer" }, highlight(answer, spans));
        p.addEventListener("click", (ev) => {
          const mark = ev.target.closest("mark[data-claim]");
          const item = mark && li.querySelector(`.turn-claims li[data-claim="${mark.dataset.claim}"]`);
          if (item) { item.scrollIntoView({ block: "nearest" }); item.focus({ preventScroll: true }); }
        });
        li.append(p);
      } else if (text && role === "tool") {
        li.append(h("details", { class: "tool-result" },
          h("summary", null, h("span", { class: "tc-kind" }, "Tool result"), " ", plural(text.length, "char")),
          h("p", { class: "text" }, quoteMarks(text, targets.get(i + ":-1")))));
      } else if (text) {
        li.append(h("p", { class: "text" }, quoteMarks(text, targets.get(i + ":-1"))));
      } else if (!msg[M_CALLS].length) {
        li.append(h("p", { class: "text empty" }, "(no text)"));
      }
      const wrong = wrongCalls.get(i) || new Map();
      msg[M_CALLS].forEach((call, j) => li.append(toolCall(call, j, wrong)));
      const ctxs = msg[M_CTX];
      if (ctxs.length) {
        li.append(h("details", { class: "msg-contexts" },
          h("summary", null, plural(ctxs.length, "retrieved context")),
          ctxs.map((c, j) => h("p", { class: "text ctx-text", id: `conv-${K}-m-${i}-c-${j}` },
            h("span", { class: "ctx-n" }, "contexts[" + j + "] "), quoteMarks(str(c), targets.get(i + ":" + j))))));
      }
      if (info) li.append(turnClaims(info, K));
      transcript.append(li);
    });
    return transcript;
  }

  // conversation K: its header and tool-call metrics at once; its transcript at once for the first
  // EAGER conversations, else when asked for (a run of thousands stays quick to open)
  function conversation(conv, K) {
    const turns = conv[V_TURNS], kept = conv[V_MSGS] != null;
    const none = turns.length ? null : h("p", { class: "placeholder" }, "No turn of this conversation was scored.");
    const refused = conv[V_REFUSED] >= 0 ? ROWS[conv[V_REFUSED]][at.R_ERRORS].map(errorNote) : null;
    const body = h("div", { class: "conv-body" });
    shown[K] = () => {
      if (!body.dataset.shown) { body.dataset.shown = "1"; body.replaceChildren(transcriptOf(conv, K)); }
    };
    if (turns.length && K < EAGER) shown[K]();
    else if (turns.length) {
      const n = kept ? conv[V_MSGS].length : turns.length;
      const more = h("button", { type: "button", class: "btn show-transcript" }, "Show the transcript (" + plural(n, kept ? "message" : "turn") + ")");
      more.addEventListener("click", () => { shown[K](); body.querySelector("li.msg")?.focus(); });
      body.append(more);
    }
    return h("article", { class: "conv", id: "conv-" + K, "data-conversation": conv[V_ID] },
      h("div", { class: "conv-h" }, h("h3", null, conv[V_ID]), h("span", { class: "conv-n" }, plural(turns.length, "scored turn"))),
      conv[V_WHOLE] >= 0 ? wholeScores(conv[V_WHOLE]) : null, toolMetrics(conv[V_TOOLS], K), refused, none,
      kept || !turns.length ? null : h("p", { class: "conv-note" }, "These records do not keep the messages: each turn's question as it was scored (with its history), then its answer."),
      body);
  }

  function turnClaims(info, K) {
    const ol = h("ol", { class: "turn-claims", "aria-label": "Claims of " + METRICS[info.m] });
    info.res[at.X_CLAIMS].forEach((c, k) => {
      const verdict = VERDICTS[c[at.C_VERDICT]];
      const link = info.links[k];
      const text = c[at.C_TEXT] >= 0 ? str(c[at.C_TEXT]) : info.answer.slice(c[at.C_S0], c[at.C_S1]);
      const li = h("li", { "data-claim": String(k), tabindex: "-1", class: "turn-claim" + (verdict ? " v-" + verdict : "") },
        h("span", { class: "n" }, "#" + k), verdict ? h("span", { class: "badge v-" + verdict }, label(verdict)) : null, " ",
        h("span", { class: "claim-text" }, text));
      if (link) {
        const where = "messages[" + link.mi + "]" + (link.cj >= 0 ? ".contexts[" + link.cj + "]" : "");
        const a = h("button", { type: "button", class: "quote-link", "data-target": `conv-${K}-m-${link.mi}`,
          "data-quote": link.key, title: link.found ? "show the quote in " + where : "show " + where + " (quote not found in it)" },
        link.quote ? "“" + (link.quote.length > 80 ? link.quote.slice(0, 77) + "…" : link.quote) + "” " : "", "→ " + where);
        a.addEventListener("click", () => goTo(K, link.mi, link.cj, link.found ? link.key : null));
        li.append(h("div", { class: "quote" }, a));
      }
      ol.append(li);
    });
    return h("div", { class: "claims-of" }, h("p", { class: "claims-h" }, plural(info.res[at.X_CLAIMS].length, "claim") + " of " + METRICS[info.m]), ol);
  }


  D.conversations.forEach((conv, K) => list.append(conversation(conv, K)));
};
