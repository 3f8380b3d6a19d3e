// The topic map, drawn as SVG from the positions networkx laid out (decoy_lab/views/topicmap.py).
// Click selects (trait `selected`), double-click folds/unfolds what a topic includes
// (`collapsed`), hover shows the details, the box finds a topic by name, wheel/drag zoom and
// pan, "fit" shows everything. Labels are placed in screen space each frame, most important
// first (picked, ringed, found, then by memory count), and a label that would overlap another
// or the legend is left out until zooming makes room.
const SVG = "http://www.w3.org/2000/svg";
const FONT = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
const BOLD = "bold " + FONT;
const LABEL_H = 14;

function h(tag, cls, parent) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (parent) parent.appendChild(e);
  return e;
}
function s(tag, cls, parent) {
  const e = document.createElementNS(SVG, tag);
  if (cls) e.setAttribute("class", cls);
  if (parent) parent.appendChild(e);
  return e;
}
function plural(n, one, many) {
  return `${n.toLocaleString("en")} ${n === 1 ? one : many || one + "s"}`;
}
function overlaps(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

function render({ model, el }) {
  const root = h("div", "decoy-map", el);
  const bar = h("div", "decoy-map-bar", root);
  const find = h("input", "decoy-map-search", bar);
  find.type = "search";
  find.placeholder = "find a topic by name";
  find.setAttribute("aria-label", "find a topic by name");
  const zin = h("button", "decoy-map-zoom-in", bar);
  zin.textContent = "+";
  zin.title = "zoom in";
  const zout = h("button", "decoy-map-zoom-out", bar);
  zout.textContent = "−";
  zout.title = "zoom out";
  const fitb = h("button", "decoy-map-fit", bar);
  fitb.textContent = "fit";
  fitb.title = "show the whole map";
  const status = h("span", "decoy-map-status", bar);
  const found = h("div", "decoy-map-found", root);
  const stage = h("div", "decoy-map-stage", root);
  const svg = s("svg", "decoy-map-svg", stage);
  const gEdges = s("g", "decoy-map-edges", svg);
  const gRel = s("g", "decoy-map-relations", svg);
  const gNodes = s("g", "decoy-map-nodes", svg);
  const gLabels = s("g", "decoy-map-labels", svg);
  const legend = h("div", "decoy-map-legend", stage);
  const tip = h("div", "decoy-map-tip", stage);
  tip.style.display = "none";

  const measure = document.createElement("canvas").getContext("2d");
  let nodes = [], byId = new Map(), edges = [], kids = new Map();
  let view = { k: 1, tx: 0, ty: 0 }, fitted = false, hovered = null, matches = new Set();
  let frame = 0, fitK = 0, moved = true; // moved: dots and edges need new positions

  function textWidth(text, bold) {
    measure.font = bold ? BOLD : FONT;
    return Math.ceil(measure.measureText(text).width);
  }

  function build() {
    nodes = (model.get("nodes") || []).map((n) => ({ ...n }));
    byId = new Map(nodes.map((n) => [n.id, n]));
    kids = new Map(nodes.map((n) => [n.id, []]));
    for (const n of nodes) if (n.parent && kids.has(n.parent)) kids.get(n.parent).push(n.id);
    edges = (model.get("edges") || []).filter((e) => byId.has(e.source) && byId.has(e.target));
    gEdges.replaceChildren();
    gNodes.replaceChildren();
    gLabels.replaceChildren();
    for (const e of edges) {
      e.line = s("line", e.inferred ? "decoy-map-edge inferred" : "decoy-map-edge", gEdges);
    }
    const most = Math.max(1, ...nodes.map((n) => n.memories));
    for (const n of nodes) {
      n.r = n.kind === "user" ? 16 : 4 + 12 * Math.sqrt(n.memories / most);
      n.text = n.kind === "user" ? n.name : n.memories ? `${n.label} (${n.memories})` : n.label;
      n.w = textWidth(n.text, false);
      n.wb = textWidth(n.text, true);
      n.dot = s("circle", "decoy-map-node kind-" + n.kind, gNodes);
      n.dot.setAttribute("fill", n.color);
      n.dot.dataset.node = n.id;
      n.tag = s("text", "decoy-map-label", gLabels);
      n.tag.textContent = n.text;
      n.tag.dataset.node = n.id;
    }
    const types = [...new Set(nodes.filter((n) => n.kind === "topic").map((n) => n.type))].sort();
    legend.replaceChildren();
    h("span", "decoy-map-legend-title", legend).textContent = "topic type (size: memories):";
    const account = nodes.find((n) => n.kind === "account");
    for (const t of account ? [...types, null] : types) {
      const row = h("div", "decoy-map-legend-row", legend);
      const dot = h("span", "decoy-map-legend-dot", row);
      dot.style.background = t === null ? account.color : (nodes.find((n) => n.type === t && n.kind === "topic") || {}).color;
      h("span", "", row).textContent = t === null ? "an account" : t || "(no type)";
    }
    const topics = nodes.filter((n) => n.kind === "topic").length;
    status.dataset.topics = topics;
    fitted = false;
    schedule();
  }

  function hiddenSet() {
    const hidden = new Set();
    const stack = [...(model.get("collapsed") || [])].flatMap((c) => kids.get(c) || []);
    while (stack.length) {
      const id = stack.pop();
      if (hidden.has(id)) continue;
      hidden.add(id);
      stack.push(...(kids.get(id) || []));
    }
    return hidden;
  }

  const sx = (n) => n.x * view.k + view.tx;
  const sy = (n) => -n.y * view.k + view.ty;

  function fit() {
    const W = stage.clientWidth, H = stage.clientHeight;
    if (!W || !H) return false;
    const hidden = hiddenSet();
    const shown = nodes.filter((n) => !hidden.has(n.id));
    if (!shown.length) return false;
    const xs = shown.map((n) => n.x), ys = shown.map((n) => -n.y);
    const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    const bottom = legend.offsetHeight + 8; // the legend runs along the foot: keep the drawing above it
    const pad = 36;
    const k = Math.min((W - 2 * pad) / Math.max(x1 - x0, 1e-6), (H - bottom - 2 * pad) / Math.max(y1 - y0, 1e-6));
    view.k = Math.max(1e-3, Math.min(k, 400));
    view.tx = W / 2 - ((x0 + x1) / 2) * view.k;
    view.ty = (H - bottom) / 2 - ((y0 + y1) / 2) * view.k;
    fitK = view.k;
    fitted = true;
    return true;
  }

  // schedule() redraws everything (the view or the graph changed); relabel() only places the
  // labels again (hover, search), which is all a hover needs.
  function schedule() {
    moved = true;
    relabel();
  }
  function relabel() {
    if (!frame) frame = requestAnimationFrame(draw);
  }

  function draw() {
    frame = 0;
    if (!fitted && !fit()) return;
    const W = stage.clientWidth, H = stage.clientHeight;
    const hidden = hiddenSet();
    const selected = model.get("selected"), ringed = model.get("ringed");
    const collapsed = new Set(model.get("collapsed") || []);
    const dim = matches.size > 0;
    if (moved) drawGraph(hidden, selected, ringed, collapsed, dim);
    moved = false;
    placeLabels(W, H, hidden, selected, ringed);
  }

  function drawGraph(hidden, selected, ringed, collapsed, dim) {
    for (const e of edges) {
      const a = byId.get(e.source), b = byId.get(e.target);
      const off = hidden.has(a.id) || hidden.has(b.id);
      e.line.style.display = off ? "none" : "";
      if (off) continue;
      e.line.setAttribute("x1", sx(a));
      e.line.setAttribute("y1", sy(a));
      e.line.setAttribute("x2", sx(b));
      e.line.setAttribute("y2", sy(b));
      const near = selected && (a.id === selected || b.id === selected);
      e.line.classList.toggle("near", !!near);
    }
    // Relation labels: only on the picked topic's own relations (readable at any size).
    gRel.replaceChildren();
    if (selected && byId.has(selected) && !hidden.has(selected)) {
      for (const e of edges) {
        if (!e.relation || (e.source !== selected && e.target !== selected)) continue;
        const a = byId.get(e.source), b = byId.get(e.target);
        if (hidden.has(a.id) || hidden.has(b.id)) continue;
        const t = s("text", "decoy-map-relation", gRel);
        t.textContent = e.relation;
        t.setAttribute("x", (sx(a) + sx(b)) / 2);
        t.setAttribute("y", (sy(a) + sy(b)) / 2 - 3);
      }
    }
    const zoom = Math.max(0.6, Math.min(2.5, Math.sqrt(view.k / (fitK || view.k))));
    for (const n of nodes) {
      const off = hidden.has(n.id);
      n.dot.style.display = off ? "none" : "";
      if (off) continue;
      n.sr = n.r * zoom;
      n.dot.setAttribute("cx", sx(n));
      n.dot.setAttribute("cy", sy(n));
      n.dot.setAttribute("r", n.sr);
      const cls = n.dot.classList;
      cls.toggle("selected", n.id === selected);
      cls.toggle("ringed", n.id === ringed);
      cls.toggle("match", matches.has(n.id));
      cls.toggle("faded", dim && !matches.has(n.id));
      cls.toggle("collapsed", collapsed.has(n.id) && (kids.get(n.id) || []).length > 0);
    }
  }

  // Greedy placement in screen space: a label goes right of its dot (left on the left half),
  // on the other side, above or below, wherever it overlaps no label placed before it, no dot
  // of a more important topic and not the legend.
  function placeLabels(W, H, hidden, selected, ringed) {
    const lg = legend.getBoundingClientRect(), st = stage.getBoundingClientRect();
    const taken = [{ x: lg.left - st.left - 2, y: lg.top - st.top - 2, w: lg.width + 4, h: lg.height + 4 }];
    const rank = (n) =>
      n.id === selected ? 0 : n.id === ringed ? 1 : n.id === hovered ? 2 : matches.has(n.id) ? 3 : n.kind === "user" ? 4 : 5;
    // A folded-away node's label goes with its dot: no label is ever left without one.
    for (const n of nodes) if (hidden.has(n.id)) n.tag.style.display = "none";
    const order = nodes
      .filter((n) => !hidden.has(n.id))
      .sort((a, b) => rank(a) - rank(b) || b.memories - a.memories || a.depth - b.depth || (a.name < b.name ? -1 : 1));
    let shown = 0;
    const cell = 64, grid = new Map();
    const keys = (b) => {
      const out = [];
      for (let gx = Math.floor(b.x / cell); gx <= Math.floor((b.x + b.w) / cell); gx++)
        for (let gy = Math.floor(b.y / cell); gy <= Math.floor((b.y + b.h) / cell); gy++) out.push(gx + "," + gy);
      return out;
    };
    const free = (b) => {
      if (b.x < 0 || b.y < 0 || b.x + b.w > W || b.y + b.h > H) return false;
      if (overlaps(b, taken[0])) return false;
      for (const k of keys(b)) for (const o of grid.get(k) || []) if (o.id !== b.id && overlaps(b, o)) return false;
      return true;
    };
    for (const n of order) {
      // Its dot becomes an obstacle now: later (less important) labels never hide it, while
      // the labels placed before it may.
      const dot = { x: sx(n) - n.sr, y: sy(n) - n.sr, w: 2 * n.sr, h: 2 * n.sr, id: n.id };
      for (const k of keys(dot)) (grid.get(k) || grid.set(k, []).get(k)).push(dot);
      const bold = n.id === selected || n.id === ringed;
      const w = bold ? n.wb : n.w;
      const x = sx(n), y = sy(n);
      let box = null;
      if (n.kind === "user") {
        const b = { x: x - w / 2, y: y - LABEL_H / 2, w, h: LABEL_H, id: n.id };
        if (free(b)) box = b;
      } else {
        const right = { x: x + n.sr + 3, y: y - LABEL_H / 2, w, h: LABEL_H, id: n.id };
        const left = { x: x - n.sr - 3 - w, y: y - LABEL_H / 2, w, h: LABEL_H, id: n.id };
        const above = { x: x - w / 2, y: y - n.sr - 2 - LABEL_H, w, h: LABEL_H, id: n.id };
        const below = { x: x - w / 2, y: y + n.sr + 2, w, h: LABEL_H, id: n.id };
        const sides = n.x < 0 ? [left, right] : [right, left];
        for (const b of [...sides, n.y > 0 ? above : below, n.y > 0 ? below : above]) if (free(b)) { box = b; break; }
      }
      if (!box) {
        n.tag.style.display = "none";
        continue;
      }
      const placed = { ...box, id: null }; // a placed label blocks every later one
      for (const k of keys(placed)) (grid.get(k) || grid.set(k, []).get(k)).push(placed);
      n.tag.style.display = "";
      n.tag.setAttribute("x", box.x);
      n.tag.setAttribute("y", box.y + LABEL_H - 3);
      n.tag.classList.toggle("bold", bold);
      n.tag.classList.toggle("on-dot", n.kind === "user");
      shown++;
    }
    const total = nodes.filter((n) => n.kind === "topic").length;
    const accounts = nodes.filter((n) => n.kind === "account").length;
    const folded = [...hidden].length;
    status.textContent =
      `${plural(total, "topic")}` +
      (accounts ? `, ${plural(accounts, "account")}` : "") +
      (folded ? ` (${folded} folded away)` : "") +
      (shown < order.length ? ` · ${shown}/${order.length} labels, zoom for more` : "");
  }

  // -- details on hover ---------------------------------------------------------------------
  function showTip(n, ev) {
    hovered = n.id;
    fillTip(n);
    tip.style.display = "block";
    moveTip(ev);
    relabel();
  }
  function fillTip(n) {
    const parent = n.parent && byId.get(n.parent);
    tip.replaceChildren();
    h("div", "decoy-map-tip-name", tip).textContent = n.name;
    const rows = [
      ["type", n.kind === "user" ? "you" : n.kind === "account" ? "an account" : n.type || "(no type)"],
      ["memories", String(n.memories)],
      ["relation", parent ? `${parent.name} — ${n.relation || "(no relation row)"} → ${n.name}` : "the centre"],
      ["visible because", n.reason || ""],
    ];
    const inc = (kids.get(n.id) || []).length;
    if (inc) rows.push(["includes", `${plural(inc, "topic")} (double-click to ${(model.get("collapsed") || []).includes(n.id) ? "unfold" : "fold"})`]);
    const table = h("table", "", tip);
    for (const [k, v] of rows) {
      const tr = h("tr", "", table);
      h("th", "", tr).textContent = k;
      h("td", "", tr).textContent = v;
    }
  }
  function moveTip(ev) {
    const st = stage.getBoundingClientRect();
    let x = ev.clientX - st.left + 14, y = ev.clientY - st.top + 14;
    if (x + tip.offsetWidth > st.width) x = Math.max(0, ev.clientX - st.left - tip.offsetWidth - 14);
    if (y + tip.offsetHeight > st.height) y = Math.max(0, ev.clientY - st.top - tip.offsetHeight - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  function hideTip() {
    hovered = null;
    tip.style.display = "none";
    relabel();
  }

  // -- pointer: pan, click, double-click, hover ---------------------------------------------
  let drag = null;
  const target = (ev) => {
    const id = ev.target && ev.target.dataset ? ev.target.dataset.node : undefined;
    return id !== undefined ? byId.get(id) : null;
  };
  svg.addEventListener("pointerdown", (ev) => {
    drag = { x: ev.clientX, y: ev.clientY, tx: view.tx, ty: view.ty, moved: false };
  });
  const onMove = (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    drag.moved = true;
    view.tx = drag.tx + dx;
    view.ty = drag.ty + dy;
    schedule();
  };
  const onUp = () => setTimeout(() => (drag = null), 0);
  window.addEventListener("pointermove", onMove);
  window.addEventListener("pointerup", onUp);
  svg.addEventListener("click", (ev) => {
    if (drag && drag.moved) return;
    const n = target(ev);
    model.set("selected", n ? n.id : "");
    model.save_changes();
  });
  svg.addEventListener("dblclick", (ev) => {
    const n = target(ev);
    if (!n || !(kids.get(n.id) || []).length) return;
    const now = new Set(model.get("collapsed") || []);
    now.has(n.id) ? now.delete(n.id) : now.add(n.id);
    model.set("collapsed", [...now]);
    model.save_changes();
  });
  svg.addEventListener("mouseover", (ev) => {
    const n = target(ev);
    if (n) showTip(n, ev);
  });
  svg.addEventListener("mousemove", (ev) => {
    if (hovered) moveTip(ev);
  });
  svg.addEventListener("mouseout", (ev) => {
    if (target(ev)) hideTip();
  });
  function zoomAt(factor, cx, cy) {
    const k = Math.max(1e-3, Math.min(view.k * factor, (fitK || view.k) * 60));
    view.tx = cx - ((cx - view.tx) * k) / view.k;
    view.ty = cy - ((cy - view.ty) * k) / view.k;
    view.k = k;
    schedule();
  }
  svg.addEventListener(
    "wheel",
    (ev) => {
      ev.preventDefault();
      const st = stage.getBoundingClientRect();
      zoomAt(Math.exp(-ev.deltaY * 0.0015), ev.clientX - st.left, ev.clientY - st.top);
    },
    { passive: false },
  );
  zin.onclick = () => zoomAt(1.5, stage.clientWidth / 2, stage.clientHeight / 2);
  zout.onclick = () => zoomAt(1 / 1.5, stage.clientWidth / 2, stage.clientHeight / 2);
  fitb.onclick = () => {
    fitted = false;
    schedule();
  };

  // -- search by name -----------------------------------------------------------------------
  function centre(n, minZoom) {
    const W = stage.clientWidth, H = stage.clientHeight;
    if (minZoom && view.k < minZoom) view.k = minZoom;
    view.tx = W / 2 - n.x * view.k;
    view.ty = H / 2 + n.y * view.k;
    schedule();
  }
  function pickFound(n) {
    model.set("selected", n.id);
    model.save_changes();
    centre(n, (fitK || view.k) * 3);
  }
  find.addEventListener("input", () => {
    const q = find.value.trim().toLowerCase();
    matches = new Set(q ? nodes.filter((n) => n.name.toLowerCase().includes(q)).map((n) => n.id) : []);
    found.replaceChildren();
    if (q) {
      const list = nodes.filter((n) => matches.has(n.id)).sort((a, b) => b.memories - a.memories);
      if (!list.length) h("div", "decoy-map-found-none", found).textContent = `no topic's name contains “${find.value.trim()}”`;
      for (const n of list.slice(0, 8)) {
        const b = h("button", "decoy-map-found-item", found);
        b.textContent = `${n.name} (${plural(n.memories, "memory", "memories")})`;
        b.dataset.node = n.id;
        b.onclick = () => pickFound(n);
      }
      if (list.length > 8) h("span", "decoy-map-found-more", found).textContent = `… ${list.length - 8} more`;
    }
    schedule();
  });
  find.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      const first = nodes.filter((n) => matches.has(n.id)).sort((a, b) => b.memories - a.memories)[0];
      if (first) pickFound(first);
    } else if (ev.key === "Escape") {
      find.value = "";
      find.dispatchEvent(new Event("input"));
    }
  });

  // A topic picked elsewhere (the table, a picker, Python) is brought into view.
  function reveal(id) {
    const n = byId.get(id);
    if (!n || !fitted) return;
    const x = sx(n), y = sy(n);
    if (x < 0 || y < 0 || x > stage.clientWidth || y > stage.clientHeight) centre(n);
  }

  const onNodes = () => build();
  const onSelected = () => {
    reveal(model.get("selected"));
    schedule();
  };
  const onRinged = () => {
    reveal(model.get("ringed"));
    schedule();
  };
  const onCollapsed = () => {
    if (hovered && byId.has(hovered)) fillTip(byId.get(hovered)); // "fold" now reads "unfold"
    schedule();
  };
  model.on("change:nodes", onNodes);
  model.on("change:edges", onNodes);
  model.on("change:selected", onSelected);
  model.on("change:ringed", onRinged);
  model.on("change:collapsed", onCollapsed);
  const resize = new ResizeObserver(() => {
    fitted = false;
    schedule();
  });
  resize.observe(stage);
  build();
  return () => {
    resize.disconnect();
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", onUp);
    model.off("change:nodes", onNodes);
    model.off("change:edges", onNodes);
    model.off("change:selected", onSelected);
    model.off("change:ringed", onRinged);
    model.off("change:collapsed", onCollapsed);
  };
}

export default { render };
