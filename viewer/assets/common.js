"use strict";
// Helpers shared by the trace page and the graph page: reading the embedded data, building DOM.
const XSPEC = JSON.parse(document.getElementById("xspec-data").textContent);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.setAttribute("class", v); else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

// "#step=4&rule=XCLAIM-6" -> {step: "4", rule: "XCLAIM-6"}
function readFragment() {
  const out = {};
  for (const part of location.hash.replace(/^#/, "").split("&")) {
    const i = part.indexOf("=");
    if (i > 0) out[decodeURIComponent(part.slice(0, i))] = decodeURIComponent(part.slice(i + 1));
  }
  return out;
}

// The address follows the selection, written once the page is idle again: history.replaceState costs
// several milliseconds, too much to pay inside every key press of a fast stepper.
let pendingFragment = null;
function writeFragment(values) {
  const parts = Object.entries(values).filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(v));
  const first = pendingFragment === null;
  pendingFragment = "#" + parts.join("&");
  if (first) setTimeout(() => { const f = pendingFragment; pendingFragment = null; history.replaceState(null, "", f); }, 0);
}

function typing(ev) {
  const t = ev.target;
  return t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA");
}

function ruleBox(container, id) {
  const known = XSPEC.rule_text && XSPEC.rule_text[id];
  container.hidden = false;
  container.replaceChildren(el("strong", null, id + (known && known.title ? " (" + known.title + ")" : "")), " ",
    el("span", {class: "meta"}, known ? known.at : "not in the rule index"), "\n", known ? known.text : "");
}
