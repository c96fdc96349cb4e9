"use strict";
// The trace page: a time-space diagram (a lane per client; for a trace/2 trace of several nodes an
// SVG with a lane per node, replication steps as arrows between lanes, faults marked), the selected
// step, the state panel. Every state shown was computed in Python; this script applies the embedded
// row differences to move between steps and draws them.
(function () {
  const D = XSPEC;
  const steps = D.steps;
  const N = steps.length + (D.divergence ? 1 : 0);  // the divergence is a step of its own, after the last
  const MULTI = D.format === "trace/2";  // a lane per node
  const ROW = 42, LANE = MULTI ? 280 : 190, LEFT = 40;
  const laneIndex = new Map(D.lanes.map((l, i) => [l.id, i]));
  document.documentElement.style.setProperty("--lane", LANE + "px");
  const state = new Map(Object.keys(D.tables).map((t) => [t, new Map()]));  // table -> row id -> cells, after step `cur`
  function tableRows(id) { return state.get(id.slice(0, id.indexOf("|"))); }
  let cur = 0;              // steps applied
  let sel = 0;              // selected step, 1..N
  let matches = [], matchAt = -1;

  // ---- diagram rows: the notes before a step, then the step -------------------------------
  const rows = [];          // {note} | {step: n (1-based)}
  const rowOfStep = [0];
  steps.forEach((s, i) => {
    for (const n of s.n || []) rows.push({note: n});
    rowOfStep.push(rows.length);
    rows.push({step: i + 1});
  });
  if (D.divergence) { rowOfStep.push(rows.length); rows.push({step: N}); }

  // ---- page skeleton ---------------------------------------------------------------------------
  const v = D.verdict;
  const search = el("input", {id: "search", type: "search", placeholder: "search: command, key, ID, consumer",
                              "aria-label": "search"});
  const found = el("span", {id: "found", class: "meta"});
  document.body.append(
    el("header", null,
      el("h1", null, D.title),
      el("span", {class: "meta"}, D.path + " · " + D.server + " · " + D.clock + " clock · " + D.format),
      el("span", {id: "verdict", class: "verdict-" + v.status}, v.status === "conform" ? "conforms" : v.text.split("\n")[0]),
      search, found,
      el("span", {id: "keys"}, "keys: j/↓ next · k/↑ previous · g/G first/last · / search · n/N next/previous match")),
    el("main", null,
      el("section", {id: "diagram", tabindex: "0", "aria-label": "time-space diagram"},
        el("div", {id: "lanes-head"}), el("div", {id: "rows"})),
      el("section", {id: "detail", "aria-label": "the selected step and the state after it"},
        el("div", {id: "headline"}), el("div", {id: "announce", class: "sr-only", "aria-live": "polite"}),
        el("div", {id: "step"}),
        el("div", {id: "ruletext", hidden: true}),
        el("h2", null, "State after this step"), el("div", {id: "state"}))));
  const diagram = document.getElementById("diagram");
  const rowsEl = document.getElementById("rows");
  const head = document.getElementById("lanes-head");
  head.style.paddingLeft = LEFT + "px";
  const nodeLabel = new Map(D.nodes.map((n) => [n.id, n.label]));
  for (const lane of D.lanes) {
    const node = MULTI ? el("div", {class: "node"}, nodeLabel.get(lane.node))
      : D.nodes.length > 1 ? el("div", {class: "node"}, lane.node) : null;
    const h = el("div", {"data-lane": lane.id}, lane.label);
    if (node) { if (MULTI) h.append(el("br"), node); else h.prepend(node, el("br")); }
    head.append(h);
  }
  const width = LEFT + D.lanes.length * LANE + 10;
  rowsEl.style.height = rows.length * ROW + "px";
  rowsEl.style.width = width + "px";
  head.style.width = width + "px";
  diagram.style.width = Math.min(width + 20, window.innerWidth * 0.52) + "px";

  function laneX(lane) { return LEFT + (laneIndex.has(lane) ? laneIndex.get(lane) : 0) * LANE; }

  // ---- drawing the visible rows of the diagram ---------------------------------------------------
  let drawn = [-1, -1];
  function drawDiagram(force, scrolled) {
    const top = scrolled === undefined ? diagram.scrollTop : scrolled, h = viewHeight;
    const first = Math.max(0, Math.floor(top / ROW) - 15), last = Math.min(rows.length, Math.ceil((top + h) / ROW) + 15);
    if (!force && first === drawn[0] && last === drawn[1]) return false;
    drawn = [first, last];
    if (MULTI) { drawNodeLanes(first, last); return true; }
    const out = [];
    for (let i = 0; i < D.lanes.length; i++) {
      const line = el("div", {class: "lane-line"});
      line.style.left = (LEFT + i * LANE + LANE / 2) + "px";
      out.push(line);
    }
    for (const [client, from, to] of D.spans) {
      const a = rowOfStep[from + 1], b = to < steps.length ? rowOfStep[to + 1] : rows.length;
      if (b < first || a > last) continue;
      const span = el("div", {class: "span", title: "client " + client + " blocked"});
      span.style.left = (laneX(client) + LANE / 2 - 3) + "px";
      span.style.top = (a * ROW + ROW / 2) + "px";
      span.style.height = Math.max(4, (b - a) * ROW) + "px";
      out.push(span);
    }
    for (let r = first; r < last; r++) {
      const row = rows[r];
      if (row.note !== undefined) {
        const n = el("div", {class: "note-row", title: row.note}, "# " + row.note);
        n.style.top = (r * ROW) + "px"; n.style.width = (width - 10) + "px";
        out.push(n);
        continue;
      }
      const k = row.step;
      const num = el("div", {class: "row-num"}, String(k));
      num.style.top = (r * ROW) + "px";
      out.push(num);
      for (const b of stepBoxes(k)) { b.style.top = (r * ROW + 3) + "px"; out.push(b); }
    }
    rowsEl.replaceChildren(...out);
    return true;
  }

  // The selection moved within the rows drawn: move its mark, without drawing them again.
  function markSelected(prev) {
    for (const e of rowsEl.querySelectorAll('[data-step="' + prev + '"]')) e.classList.remove("sel");
    for (const e of rowsEl.querySelectorAll('[data-step="' + sel + '"]')) e.classList.add("sel");
  }

  function stepBoxes(k) {
    const matched = matches.length && matches.includes(k);
    if (k > steps.length) {
      const d = D.divergence;
      const box = el("div", {class: "box diverge" + (k === sel ? " sel" : "") + (matched ? " hit" : ""), "data-step": k,
                             title: "diverges here: " + d.message},
        "✗ " + (d.cmd || d.message), el("span", {class: "r"}, "trace: " + (d.says === null ? "-" : d.says)));
      place(box, d.client);
      return [box];
    }
    const s = steps[k - 1];
    let cls = "box";
    let top = s.cmd || (s.k === "timeout" ? "(timeout)" : s.k === "close" ? "(closes)" : s.k);
    let bottom = s.b ? "… blocks" : s.r !== undefined ? "‹ " + s.r : "";
    if (s.k === "timeout") { cls += " timeout"; top = "⏱ times out"; }
    else if (s.b) cls += " blocked";
    else if (s.r !== undefined && !s.r.startsWith("(error)")) cls += " ok";
    if (s.x !== undefined || (s.sv || []).some((e) => e.length > 3)) cls += " bad";
    if (s.d.length) cls += " changed";
    if (k === sel) cls += " sel";
    if (matched) cls += " hit";
    const box = el("div", {class: cls, "data-step": k, title: top + (bottom ? "\n" + bottom : "")},
      top, el("span", {class: "r"}, bottom));
    place(box, s.c);
    const out = [box];
    for (const [client, reply] of s.sv || []) {
      const sv = el("div", {class: "box served" + (k === sel ? " sel" : ""), "data-step": k,
                            title: "client " + client + " served: " + reply}, "served by this step",
        el("span", {class: "r"}, "‹ " + reply));
      place(sv, client);
      const a = Math.min(laneX(s.c), laneX(client)) + LANE - 8, b = Math.max(laneX(s.c), laneX(client)) + 8;
      const arrow = el("div", {class: "arrow"});
      arrow.style.left = a + "px"; arrow.style.width = Math.max(0, b - a) + "px";
      out.push(sv);
      out.push(arrow);
      arrow.style.marginTop = (ROW / 2 - 3) + "px";
    }
    return out;
  }

  // ---- trace/2: one lane per node, drawn in SVG ---------------------------------------------------
  const MARKS = {crash: "✕", restart: "↻", pause: "⏸", resume: "▶"};
  function cut(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "…" : text; }
  function mid(node) { return laneX(node) + LANE / 2; }
  function stepClass(s, k) {
    let cls = "st";
    if (s.k === "timeout") cls += " timeout";
    else if (s.b) cls += " blocked";
    else if (s.r !== undefined && !s.r.startsWith("(error)")) cls += " ok";
    if (s.d.length) cls += " changed";
    if (k === sel) cls += " sel";
    if (matches.length && matches.includes(k)) cls += " hit";
    return cls;
  }
  function nodeStepShapes(k, y) {
    if (k > steps.length) {
      const d = D.divergence;
      const x = laneX(d.node) + 6;
      return [svg("g", {"data-step": k, class: "st diverge" + (k === sel ? " sel" : "")},
        svg("title", {text: "diverges here: " + d.message}),
        svg("rect", {x, y: y + 3, width: LANE - 12, height: ROW - 6, rx: 4}),
        svg("text", {x: x + 6, y: y + 17, text: cut("✗ " + (d.cmd || d.message), 38)}),
        svg("text", {x: x + 6, y: y + 31, class: "r", text: cut("trace: " + (d.says === null ? "-" : d.says), 38)}))];
    }
    const s = steps[k - 1];
    const g = svg("g", {"data-step": k, "data-kind": s.k, class: stepClass(s, k) + (s.m ? " m-" + s.m.split(" ")[0] : "")},
                  svg("title", {text: (s.w || s.cmd || s.k) + (s.r !== undefined ? "\n‹ " + s.r : "")}));
    const x = laneX(s.nd);
    if (s.k === "command" || s.k === "timeout" || s.k === "close" || s.k === "connect") {
      const top = s.k === "timeout" ? "⏱ c" + s.c + " times out" : (s.c === null ? "" : "c" + s.c + " ") + (s.cmd || s.k);
      const bottom = s.b ? "… blocks" : s.r !== undefined ? "‹ " + s.r : "";
      g.append(svg("rect", {x: x + 6, y: y + 3, width: LANE - 12, height: ROW - 6, rx: 4}),
               svg("text", {x: x + 12, y: y + 17, text: cut(top, 36)}),
               svg("text", {x: x + 12, y: y + 31, class: "r", text: cut(bottom, 36)}));
      for (const [client, reply] of s.sv || []) {
        g.append(svg("text", {x: x + LANE - 10, y: y + 17, class: "served", "text-anchor": "end", text: "serves c" + client}));
      }
      return [g];
    }
    // a step of the servers or of the harness: a mark on its lane, an arrow to the other end
    const cx = mid(s.nd), cy = y + ROW / 2;
    if (s.to !== undefined && laneIndex.has(s.to)) {
      const tx = mid(s.to), dir = tx > cx ? 1 : -1;
      const line = svg("line", {x1: cx + dir * 8, y1: y + 8, x2: tx - dir * 8, y2: y + ROW - 8, class: "arrow2",
                                "marker-end": "url(#head)"});
      if (s.m && s.m.startsWith("link")) line.setAttribute("stroke-dasharray", "4 3");
      g.append(line);
    }
    const sign = MARKS[s.m];
    if (sign) g.append(svg("text", {x: cx, y: cy + 6, class: "mark", "text-anchor": "middle", text: sign}));
    else g.append(svg("circle", {cx, cy, r: 5}));
    const label = s.w ? s.w.replace(/^[^:]*: /, "") : s.m || s.k;
    // beside the mark, away from the arrow where the lane leaves room (about 7 px a character)
    const right = s.to === undefined || mid(s.to) < cx || cx - LEFT < 150;
    const room = right ? (s.to !== undefined && mid(s.to) > cx ? (mid(s.to) - cx) / 2 : LANE / 2 + 100) : cx - LEFT;
    g.append(svg("text", {x: right ? cx + 12 : cx - 12, y: right && s.to !== undefined && mid(s.to) > cx ? y + 10 : cy + 4,
                          class: "label", "text-anchor": right ? "start" : "end", text: cut(label, Math.max(8, Math.floor(room / 7)))}));
    return [g];
  }
  const svgRoot = svg("svg", {id: "lanes-svg", width, height: rows.length * ROW});
  if (MULTI) rowsEl.append(svgRoot);
  function drawNodeLanes(first, last) {
    const out = [svg("defs", null, svg("marker", {id: "head", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
      markerHeight: 7, orient: "auto-start-reverse"}, svg("path", {d: "M0,0 L10,5 L0,10 z"})))];
    for (const [node, from, to, what] of D.down || []) {
      const a = rowOfStep[from + 1], b = to < steps.length ? rowOfStep[to + 1] : rows.length;
      if (b < first || a > last) continue;
      out.push(svg("rect", {class: "down " + what, x: laneX(node) + 2, y: a * ROW, width: LANE - 4, height: (b - a) * ROW},
        svg("title", {text: "node " + node + " " + what})));
    }
    for (let i = 0; i < D.lanes.length; i++) {
      const x = LEFT + i * LANE + LANE / 2;
      out.push(svg("line", {class: "lane", x1: x, x2: x, y1: first * ROW, y2: last * ROW}));
    }
    for (const [node, from, to, client] of D.spans) {
      const a = rowOfStep[from + 1], b = to < steps.length ? rowOfStep[to + 1] : rows.length;
      if (b < first || a > last) continue;
      out.push(svg("rect", {class: "span2", x: laneX(node) + 1, y: a * ROW + ROW / 2, width: 4,
                            height: Math.max(4, (b - a) * ROW)}, svg("title", {text: "client " + client + " blocked"})));
    }
    for (let r = first; r < last; r++) {
      const row = rows[r], y = r * ROW;
      if (row.note !== undefined) {
        out.push(svg("text", {class: "note", x: LEFT, y: y + 24, text: cut("# " + row.note, 80)}));
        continue;
      }
      out.push(svg("text", {class: "num", x: 34, y: y + 24, "text-anchor": "end", text: String(row.step)}));
      out.push(...nodeStepShapes(row.step, y));
    }
    svgRoot.replaceChildren(...out);
  }

  function place(box, client) {
    box.style.left = (laneX(client) + 6) + "px";
    box.style.width = (LANE - 12) + "px";
  }

  diagram.addEventListener("scroll", () => requestAnimationFrame(() => drawDiagram(false)));
  rowsEl.addEventListener("click", (ev) => {
    const b = ev.target.closest("[data-step]");
    if (b) select(Number(b.dataset.step));
  });

  // ---- moving the state between steps: apply or undo a step's row differences ------------------
  function apply(diff) {
    for (const [id, kind, after] of diff) { if (kind === "-") tableRows(id).delete(id); else tableRows(id).set(id, after); }
  }
  function undo(diff) {
    for (const [id, kind, , before] of diff) { if (kind === "+") tableRows(id).delete(id); else tableRows(id).set(id, before); }
  }
  function moveTo(k) {
    const target = Math.min(k, steps.length);
    while (cur < target) apply(steps[cur++].d);
    while (cur > target) undo(steps[--cur].d);
  }

  // ---- the selected step ---------------------------------------------------------------------------
  const detail = document.getElementById("step");
  // Three parts: what happened, the rules, the changes; a part left alone by a step stays laid out.
  const stepMain = el("div"), stepRules = el("div"), stepChanges = el("div");
  detail.append(stepMain, stepRules, stepChanges);
  const headline = document.getElementById("headline");
  const rulebox = document.getElementById("ruletext");
  const announce = document.getElementById("announce");

  // Consecutive steps often cite the same rules (the same command again): their list is kept, not
  // built again, and only its links' step changes.
  const ruleLists = new Map();  // "ru"/"ch" -> {key, box}
  function ruleLinks(indexes, cls) {
    const slot = cls || "ru", key = indexes.join(",");
    const kept = ruleLists.get(slot);
    if (kept && kept.key === key) {
      for (const a of kept.box.querySelectorAll("a")) a.setAttribute("href", "#step=" + sel + "&rule=" + a.dataset.rule);
      return kept.box;
    }
    const box = el("div", {class: "rules" + (cls ? " " + cls : "")}, cls ? "also checked: " : "rules: ",
      ...indexes.map((i) => el("a", {href: "#step=" + sel + "&rule=" + D.rules[i], "data-rule": D.rules[i],
                                     title: (D.rule_text[D.rules[i]] || {}).text || ""}, D.rules[i])));
    ruleLists.set(slot, {key, box});
    return box;
  }

  function when(t) { return t === null || t === undefined ? "" : " · t+" + t + " ms"; }

  function showStep() {
    if (sel > steps.length) {
      const d = D.divergence;
      headline.textContent = "Step " + sel + " of " + N + " · line " + d.line + (d.node ? " · node " + d.node : "") +
        (d.client === null ? "" : " · client " + d.client) + " · the trace diverges";
      const allowed = d.allows.length ? d.allows.map((a) => el("pre", null, a)) : [el("pre", null, "(no reply at all)")];
      stepRules.replaceChildren();
      stepChanges.replaceChildren();
      stepMain.replaceChildren(...[
        d.cmd ? el("div", {class: "cmdline"}, "> " + d.cmd) : null,
        el("div", {class: "mismatch"}, d.message + (d.where ? " · differs at " + d.where : "")),
        d.rules.length ? ruleLinks(d.rules) : null,
        el("div", {class: "side", id: "divergence"},
          el("div", {class: "says"}, el("h3", null, "the trace says (line " + d.line + ")"), el("pre", null, d.says === null ? "-" : d.says)),
          el("div", {class: "allows"}, el("h3", null, "the model allows"), ...allowed)),
        el("div", {class: "meta"}, "No execution of the model explains this event; the state below is the model's after the last step that conforms.")
      ].filter(Boolean));
      ruleLists.clear();  // that list belongs to this part only
      announce.textContent = "Step " + sel + ": the trace diverges: " + d.message;
      return;
    }
    const s = steps[sel - 1];
    headline.textContent = "Step " + sel + " of " + N + (s.l ? " · line " + s.l : "") + (MULTI ? " · node " + s.nd : "") +
      (s.c === null || s.c === undefined ? "" : " · client " + s.c) + when(s.t);
    const parts = [];
    if (MULTI && !s.cmd) parts.push(el("div", {class: "cmdline"}, s.w + (s.to ? "  (" + s.nd + " → " + s.to + ")" : "")));
    for (const n of s.n || []) parts.push(el("div", {class: "notes"}, "# " + n));
    if (s.cmd) parts.push(el("div", {class: "cmdline"}, "> " + s.cmd));
    if (s.k === "timeout") parts.push(el("div", {class: "reply"}, "client " + s.c + " times out (BLOCK-8)"));
    if (s.k === "close") parts.push(el("div", {class: "reply"}, "client " + s.c + " closes its connection"));
    if (s.b) parts.push(el("div", {class: "reply"}, "< (blocks)"));
    else if (s.r !== undefined) parts.push(el("div", {class: "reply"}, "< " + s.r));
    if (s.x !== undefined) {
      parts.push(el("div", {class: "side"},
        el("div", {class: "says"}, el("h3", null, "the trace says"), el("pre", null, s.x)),
        el("div", {class: "allows"}, el("h3", null, "the model replies"), el("pre", null, s.r))));
    }
    for (const [client, reply, line, expected] of s.sv || []) {
      parts.push(el("div", {class: "reply"}, "< client " + client + " is served" + (line ? " (line " + line + ")" : "") + ": " + reply));
      if (expected !== undefined) parts.push(el("div", {class: "mismatch"}, "! the trace says " + expected));
    }
    stepMain.replaceChildren(...parts);
    replaceParts(stepRules, [s.ru ? ruleLinks(s.ru) : null, s.ch ? ruleLinks(s.ch, "checked") : null].filter(Boolean));
    const list = el("ul", {class: "changes"});
    for (const [id, kind, after, before, changed, why] of s.d) {
      const [table, ...key] = id.split("|");
      const cols = D.tables[table].columns;
      let text;
      if (kind === "+") text = "+ " + table + " " + key.join(" ");
      else if (kind === "-") text = "- " + table + " " + key.join(" ");
      else text = "~ " + table + " " + key.join(" ") + ": " +
        changed.map((i) => cols[i] + " " + show(table, i, before[i], s.t) + " → " + show(table, i, after[i], s.t)).join("; ");
      if (why.length) text += "  [" + why.map((i) => D.rules[i]).join(", ") + "]";
      list.append(el("li", {class: kind === "+" ? "add" : kind === "-" ? "del" : "chg"}, text));
    }
    if (!s.d.length) list.append(el("li", {class: "empty"}, "no state change"));
    stepChanges.replaceChildren(list);
    announce.textContent = "Step " + sel + (s.cmd ? ": " + s.cmd : ": " + (s.w || s.k)) +
      (s.b ? ", blocks" : s.r !== undefined ? ", reply " + s.r.slice(0, 80) : "") +
      (s.d.length ? ", " + s.d.length + (s.d.length === 1 ? " state change" : " state changes") : ", no state change");
  }

  // Replace a container's children by `parts`, leaving those already in place where they are.
  function replaceParts(box, parts) {
    const now = box.children;
    if (now.length === parts.length && parts.every((e, i) => now[i] === e)) return;
    box.replaceChildren(...parts);
  }

  // A cell as shown: absolute times relative to the step's clock.
  function show(table, i, value, now) {
    const t = D.tables[table];
    if (value === null || value === undefined) {
      const c = t.columns[i];
      return c === "deadline" ? "never" : (c === "entries-read" || c === "lag") ? "nil" : "-";
    }
    if (t.time.includes(i) && now !== null && now !== undefined) {
      return t.columns[i] === "deadline" ? "in " + (value - now) + " ms" : (now - value) + " ms";
    }
    return String(value);
  }

  // ---- the state panel ---------------------------------------------------------------------------
  // Each table is drawn once and kept; a step updates only the cells whose text changed and the rows
  // it marks. The columns have fixed widths, measured once over every value the trace shows, so a
  // changed cell (idle times move at every step) lays out its own row, not the whole table, and the
  // columns stay where they are from one step to the next.
  const SHOWN = 40;   // a bigger table shows its changed rows and the newest others
  const collator = new Intl.Collator(undefined, {numeric: true});
  const stateEl = document.getElementById("state");
  const drawnTables = new Map();  // table name -> {h2, table, rows: Map(row id -> drawn row)}
  const emptyEl = el("div", {class: "empty"}, "empty: no keys, no blocked clients");
  // Per table, the width in characters of each key and value column, measured when the page was built.
  const widths = Object.fromEntries(Object.entries(D.tables).map(([name, t]) => [name, t.widths]));

  function tableOf(name, t) {
    let d = drawnTables.get(name);
    if (!d) {
      const w = widths[name];
      const table = el("table", {class: "state", "data-table": name},
        el("colgroup", null, ...w.map((n) => el("col", {style: "width: " + n + "ch"}))),
        el("tr", null, ...t.keys.map((k) => el("th", {class: "key", scope: "col"}, k)),
           ...t.columns.map((c) => el("th", {scope: "col"}, c))));
      // 12 px of padding and a border a column (view.css)
      table.style.width = "calc(" + w.reduce((a, n) => a + n, 0) + "ch + " + w.length * 13 + "px)";
      d = {h2: el("h2", null, t.title), table, rows: new Map()};
      drawnTables.set(name, d);
    }
    return d;
  }

  function setCell(td, text, width) {
    td.firstChild.data = text;
    if (text.length > width) td.title = text; else if (td.title) td.removeAttribute("title");
  }

  function buildRow(id, name, kind, texts, was) {
    const t = D.tables[name], w = widths[name], nk = t.keys.length;
    const tr = el("tr", {"data-row": id, "data-mark": kind === "+" ? "add" : kind === "-" ? "del" : kind === "~" ? "chg" : null,
                         class: kind === "+" ? "add" : kind === "-" ? "del" : null});
    id.split("|").slice(1).forEach((k, i) => {
      const td = el("td", {class: "key"}, k);
      if (k.length > (w[i] || 0)) td.title = k;
      tr.append(td);
    });
    const cells = texts.map((text, i) => {
      const td = el("td", {"data-col": t.columns[i]}, text);
      if (text.length > w[nk + i]) td.title = text;
      if (was.has(i)) { td.className = "chg"; td.append(el("span", {class: "was"}, "was " + was.get(i))); }
      tr.append(td);
      return td;
    });
    return {tr, cells};
  }

  function drawState() {
    const s = sel <= steps.length ? steps[sel - 1] : null;
    const now = s ? s.t : (steps.length ? steps[steps.length - 1].t : null);
    const marks = new Map();  // row id -> diff row
    if (s) for (const d of s.d) marks.set(d[0], d);
    const out = [];
    for (const [name, t] of Object.entries(D.tables)) {
      const rows = state.get(name);
      let list = [];
      for (const [id, d] of marks) if (d[1] === "-" && id.startsWith(name + "|")) list.push([id, d[3]]);
      let hidden = 0;
      if (rows.size + list.length > SHOWN) {
        const all = [...rows];
        const changed = all.filter(([id]) => marks.has(id));
        const room = Math.max(SHOWN - changed.length - list.length, 0);
        const rest = [];
        for (let i = all.length - 1; i >= 0 && rest.length < room; i--) if (!marks.has(all[i][0])) rest.push(all[i]);
        hidden = rows.size - changed.length - rest.length;
        list = list.concat(changed, rest);
      } else {
        for (const r of rows) list.push(r);
      }
      if (!list.length) continue;
      list.sort((a, b) => collator.compare(a[0], b[0]));
      const d = tableOf(name, t);
      const title = t.title + (hidden ? " (" + hidden + " unchanged rows not shown)" : "");
      if (d.h2.textContent !== title) d.h2.textContent = title;
      const keep = new Map(), nk = t.keys.length, w = widths[name];
      for (const [id, cells] of list) {
        const mark = marks.get(id);
        const kind = mark ? mark[1] : null;
        const texts = cells.map((value, i) => show(name, i, value, now));
        const was = new Map(kind === "~" ? mark[4].map((i) => [i, show(name, i, mark[3][i], now)]) : []);
        const sig = (kind || "") + "\u0002" + [...was].join("\u0001");  // the row's mark: rebuilt when it changes
        let r = d.rows.get(id);
        if (r && r.sig === sig) {  // the same mark: only the cells whose text changed
          texts.forEach((text, i) => { if (r.texts[i] !== text) { setCell(r.cells[i], text, w[nk + i]); r.texts[i] = text; } });
        } else {
          r = {...buildRow(id, name, kind, texts, was), sig, texts};
        }
        keep.set(id, r);
      }
      // The rows that go first, then each row after the one before it: a row moves only when its
      // place changed (one row leaving the top of a list must not move all the others).
      for (const [id, r] of d.rows) if (keep.get(id) !== r) r.tr.remove();
      let at = d.table.rows[0];
      for (const r of keep.values()) {
        if (at.nextSibling !== r.tr) at.after(r.tr);
        at = r.tr;
      }
      d.rows = keep;
      out.push(d.h2, d.table);
    }
    if (!out.length) out.push(emptyEl);
    const current = stateEl.children;
    if (current.length !== out.length || out.some((e, i) => current[i] !== e)) stateEl.replaceChildren(...out);
  }

  // ---- selection, keyboard, search, fragment ----------------------------------------------------------
  let viewHeight = diagram.clientHeight || 800;
  window.addEventListener("resize", () => { viewHeight = diagram.clientHeight || 800; drawDiagram(true); });

  function select(k, keepRule) {
    const prev = sel;
    sel = Math.max(1, Math.min(N, k));
    // Scroll first, while the layout is clean: reading it after the panels change would lay the page out twice.
    const top = rowOfStep[sel] * ROW, h = viewHeight;
    let scroll = diagram.scrollTop;
    if (top < scroll + 30 || top + ROW > scroll + h) {
      scroll = Math.max(0, top - h / 3);
      diagram.scrollTop = scroll;
    }
    moveTo(sel);
    showStep();
    drawState();
    if (!drawDiagram(false, scroll)) markSelected(prev);
    if (!keepRule && !rulebox.hidden) rulebox.hidden = true;
    writeFragment({step: sel, rule: keepRule || null});
    document.body.dataset.step = String(sel);
  }

  function searchText(k) {
    if (k > steps.length) { const d = D.divergence; return [d.cmd, d.says, ...d.allows].join(" ").toLowerCase(); }
    const s = steps[k - 1];
    return [s.cmd, s.r, s.x, s.w, ...(s.sv || []).map((e) => e[1]), ...s.d.map((d) => d[0].replace(/\|/g, " ")),
            ...(s.n || [])].filter(Boolean).join(" ").toLowerCase();
  }
  function runSearch() {
    const q = search.value.trim().toLowerCase();
    matches = [];
    if (q) for (let k = 1; k <= N; k++) if (searchText(k).includes(q)) matches.push(k);
    matchAt = -1;
    found.textContent = q ? matches.length + " steps match" : "";
    drawDiagram(true);
  }
  function nextMatch(dir) {
    if (!matches.length) return;
    let i = matches.findIndex((k) => (dir > 0 ? k > sel : k >= sel));
    if (dir > 0) i = i < 0 ? 0 : i; else i = (i < 0 ? matches.length : i) - 1;
    if (i < 0) i = matches.length - 1;
    matchAt = i;
    found.textContent = (i + 1) + "/" + matches.length + " matching steps";
    select(matches[i]);
  }
  search.addEventListener("input", runSearch);
  search.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); nextMatch(ev.shiftKey ? -1 : 1); }
    else if (ev.key === "Escape") { search.blur(); }
  });

  document.addEventListener("keydown", (ev) => {
    if (typing(ev) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const k = ev.key;
    if (k === "j" || k === "ArrowDown" || k === "ArrowRight") select(sel + 1);
    else if (k === "k" || k === "ArrowUp" || k === "ArrowLeft") select(sel - 1);
    else if (k === "g" || k === "Home") select(1);
    else if (k === "G" || k === "End") select(N);
    else if (k === "/") search.focus();
    else if (k === "n") nextMatch(1);
    else if (k === "N") nextMatch(-1);
    else return;
    ev.preventDefault();
  });

  document.getElementById("detail").addEventListener("click", (ev) => {
    const a = ev.target.closest("a[data-rule]");
    if (!a) return;
    ev.preventDefault();
    ruleBox(rulebox, a.dataset.rule);
    writeFragment({step: sel, rule: a.dataset.rule});
  });

  // "#line=L" (an audit report's link): the step of the trace file's line L (a command's call or
  // send, or the recv of a blocked command it serves), else the first step after it.
  function stepOfLine(line) {
    let after = null;
    for (let k = 1; k <= steps.length; k++) {
      const s = steps[k - 1];
      if (s.l === line || (s.sv || []).some((e) => e[2] === line)) return k;
      if (after === null && s.l !== null && s.l !== undefined && s.l > line) after = k;
    }
    if (D.divergence && D.divergence.line !== null && D.divergence.line <= line) return N;
    return after === null ? N : after;
  }

  function fromFragment() {
    const f = readFragment();
    let k = Number(f.step);
    if (!(Number.isFinite(k) && k >= 1) && Number.isFinite(Number(f.line)) && Number(f.line) >= 1) k = stepOfLine(Number(f.line));
    select(Number.isFinite(k) && k >= 1 ? k : (D.divergence ? N : 1), f.rule);
    if (f.rule) ruleBox(rulebox, f.rule);
  }
  window.addEventListener("hashchange", () => {
    const f = readFragment();
    if (f.line !== undefined || Number(f.step) !== sel) fromFragment();
  });
  if (!N) {
    document.getElementById("headline").textContent = "No steps: " + (D.note || "");
    drawState();
  } else {
    fromFragment();
  }
  window.xspecView = {select, stepOfLine, get step() { return sel; }, steps: N, readyAt: performance.now()};
})();
