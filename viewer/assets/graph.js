"use strict";
// The state-graph page: the explored graph as laid out in Python (SVG), a click shows a state's
// full state and the shortest trace to it. Nothing is computed here but drawing.
(function () {
  const D = XSPEC;
  const byId = new Map(D.nodes.map((n) => [n.id, n]));
  let sel = null;

  const about = D.whole ? D.states + " states, " + D.transitions + " transitions"
    : "showing " + D.shown + " of " + D.states + " states: the paths to the violations and their neighbours";
  const violations = D.nodes.filter((n) => n.violates.length);
  document.body.append(
    el("header", null, el("h1", null, D.title),
      el("span", {class: "meta"}, about + (D.complete ? "" : " (exploration stopped early)")),
      el("span", {class: violations.length ? "verdict-diverge" : "verdict-conform"},
        violations.length ? violations.length + " states violate a property (red)" : "no state violates a property"),
      ...Object.entries(D.properties).map(([p, m]) => el("span", {class: "meta"}, p + ": " + m)),
      el("span", {id: "keys"}, "click a state; v: next violation; p: parent")),
    el("main", null, el("section", {id: "graph"}), el("section", {id: "detail"},
      el("div", {id: "headline"}, "Click a state to see it and the shortest trace to it."), el("div", {id: "node"}))));

  const edges = svg("g", {});
  for (const [a, b] of D.edges) {
    const p = byId.get(a), q = byId.get(b);
    edges.append(svg("line", {class: "edge", x1: p.x, y1: p.y, x2: q.x, y2: q.y, "data-from": a, "data-to": b}));
  }
  const nodes = svg("g", {});
  for (const n of D.nodes) {
    const cls = "node" + (n.violates.length ? " violation" : "") + (n.id === 0 ? " initial" : "");
    const g = svg("g", {class: cls, "data-state": n.id, transform: "translate(" + n.x + "," + n.y + ")"},
      svg("title", {text: "#" + n.id + "\n" + n.label.join("\n") + (n.violates.length ? "\nviolates " + n.violates.join("; ") : "")}),
      svg("circle", {r: n.violates.length ? 11 : 8}),
      svg("text", {x: 12, y: 4, text: String(n.id)}));
    nodes.append(g);
  }
  const root = svg("svg", {width: D.width, height: D.height, viewBox: "0 0 " + D.width + " " + D.height}, edges, nodes);
  document.getElementById("graph").append(root);
  root.addEventListener("click", (ev) => {
    const g = ev.target.closest("[data-state]");
    if (g) select(Number(g.dataset.state));
  });

  function pathTo(id) {
    const out = [];
    for (let n = byId.get(id); n; n = byId.get(n.parent)) out.unshift(n);
    return out;
  }

  function cellText(table, i, v) {
    if (v === null || v === undefined) return "-";
    if (D.tables[table].time.includes(i)) return (D.tables[table].columns[i] === "deadline" ? "in " + v : -v) + " ms";
    return String(v);
  }

  function stateTables(rows) {
    const by = {};
    for (const [id, cells] of rows) (by[id.slice(0, id.indexOf("|"))] ||= []).push([id, cells]);
    const out = [];
    for (const [name, t] of Object.entries(D.tables)) {
      if (!by[name]) continue;
      const table = el("table", {class: "state", "data-table": name},
        el("tr", null, ...t.keys.map((k) => el("th", {class: "key"}, k)), ...t.columns.map((c) => el("th", null, c))));
      for (const [id, cells] of by[name]) {
        table.append(el("tr", {"data-row": id}, ...id.split("|").slice(1).map((k) => el("td", {class: "key"}, k)),
          ...cells.map((v, i) => el("td", {"data-col": t.columns[i]}, cellText(name, i, v)))));
      }
      out.push(el("h2", null, t.title), table);
    }
    return out;
  }

  function select(id) {
    const n = byId.get(id);
    if (!n) return;
    sel = id;
    const path = pathTo(id);
    const onPath = new Set(path.map((p) => p.id));
    for (const g of nodes.children) {
      const s = Number(g.dataset.state);
      g.classList.toggle("sel", s === id);
      g.classList.toggle("onpath", onPath.has(s) && s !== id);
    }
    for (const line of edges.children) {
      const a = Number(line.dataset.from), b = Number(line.dataset.to);
      line.classList.toggle("onpath", onPath.has(a) && onPath.has(b) && byId.get(b).parent === a);
    }
    document.getElementById("headline").textContent = "State #" + id + " · depth " + n.depth;
    document.getElementById("node").replaceChildren(
      ...n.violates.map((v) => el("div", {class: "mismatch"}, "violates " + v)),
      el("pre", {class: "cmdline", id: "label"}, n.label.join("\n")),
      el("h2", null, "Shortest trace to it (" + (path.length - 1) + " steps)"),
      el("ol", {class: "path", id: "path"}, ...path.slice(1).map((p) => el("li", {"data-state": p.id}, p.via))),
      el("h2", null, "Processes"), el("pre", {class: "mono"}, n.locals.join("\n")),
      ...stateTables(n.rows));
    writeFragment({state: id});
    document.body.dataset.state = String(id);
  }

  document.getElementById("node").addEventListener("click", (ev) => {
    const li = ev.target.closest("li[data-state]");
    if (li) select(Number(li.dataset.state));
  });
  document.addEventListener("keydown", (ev) => {
    if (typing(ev) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "v" && violations.length) {
      const i = violations.findIndex((n) => n.id > (sel ?? -1));
      select(violations[i < 0 ? 0 : i].id);
    } else if (ev.key === "p" && sel !== null && byId.get(sel).parent >= 0) select(byId.get(sel).parent);
    else return;
    ev.preventDefault();
  });
  const f = readFragment();
  if (f.state !== undefined && byId.has(Number(f.state))) select(Number(f.state));
  else if (violations.length) select(violations[0].id);
  window.xspecView = {select, get state() { return sel; }};
})();
