// The topic map, drawn as SVG from the positions networkx laid out (decoy_lab/views/topicmap.py).
// Click selects (trait `selected`), double-click folds/unfolds what a topic includes
// (`collapsed`), hover shows the details, the box finds a topic by name, wheel/drag zoom and
// pan, "fit" shows everything. Labels are placed in screen space each frame, most important
// first (picked, ringed, found, then by memory count), and a label that would overlap another
// or the legend is left out until zooming makes room.
//
// A large map (trait `clusters` not empty) is drawn by level of detail: each cluster is a
// tinted circle named on its rim (largest first, while names fit); topics' dots scale with the
// zoom (in data units: they never touch), relations inside a cluster and topics' names appear
// once a topic's slot is wide enough on screen. Hover and click find the nearest topic through a
// grid in data space, so every topic answers at every zoom, named or not; over a cluster's
// empty ground the tip describes the cluster and a click zooms to it.
const SVG = "http://www.w3.org/2000/svg";
const FONT = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
const BOLD = "bold " + FONT;
const LABEL_H = 14;
const MIN_DOT = 1.3; // px: a large map's dot never shrinks below this
const EDGE_SLOT = 7; // px: a slot this wide shows the relations inside clusters
const LABEL_SLOT = 11; // px: … and the topics' names where they fit
const BIG_DOT = 5; // px: a dot this big is named at any zoom, where its name fits
const NEAR = 9; // px: how close the pointer must come to a topic's dot to hover or pick it (at most)

function s(tag, cls, parent) {
  const e = document.createElementNS(SVG, tag);
  if (cls) e.setAttribute("class", cls);
  if (parent) parent.appendChild(e);
  return e;
}
function overlaps(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

// Boxes already on the page (labels, dots), in a coarse grid; `free(b, id)` is true when b
// stays on the stage, off the legend and off every box but those of `id` (a topic's own dot).
class Board {
  constructor(W, H, legend) {
    this.W = W;
    this.H = H;
    this.legend = legend;
    this.cells = new Map();
  }
  keys(b) {
    const out = [];
    for (let gx = Math.floor(b.x / 64); gx <= Math.floor((b.x + b.w) / 64); gx++)
      for (let gy = Math.floor(b.y / 64); gy <= Math.floor((b.y + b.h) / 64); gy++) out.push(gx + "," + gy);
    return out;
  }
  take(b) {
    for (const k of this.keys(b)) (this.cells.get(k) || this.cells.set(k, []).get(k)).push(b);
  }
  free(b, id) {
    if (b.x < 0 || b.y < 0 || b.x + b.w > this.W || b.y + b.h > this.H || overlaps(b, this.legend)) return false;
    for (const k of this.keys(b)) for (const o of this.cells.get(k) || []) if ((id === undefined || o.id !== id) && overlaps(b, o)) return false;
    return true;
  }
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
  const gClusters = s("g", "decoy-map-clusters", svg);
  const gEdges = s("g", "decoy-map-edges", svg);
  const gRel = s("g", "decoy-map-relations", svg);
  const gNodes = s("g", "decoy-map-nodes", svg);
  const gLabels = s("g", "decoy-map-labels", svg);
  const legend = h("div", "decoy-map-legend", stage);
  const tip = h("div", "decoy-map-tip", stage);
  tip.style.display = "none";

  const measure = document.createElement("canvas").getContext("2d");
  let nodes = [], byId = new Map(), edges = [], kids = new Map(), incident = new Map();
  let view = { k: 1, tx: 0, ty: 0 }, fitted = false, hovered = null, matches = new Set();
  let fitK = 0, moved = true; // moved: dots and edges need new positions
  let picked = false, styled = { selected: "", ringed: "" }; // picked: only what the pick or ring styles changed
  let clusters = [], large = false, grid = new Map(), slot = 1, hoveredCluster = null;
  const CELL = 2; // data units: the hit grid's cell (a topic's slot is 1)

  function textWidth(text, bold) {
    measure.font = bold ? BOLD : FONT;
    return Math.ceil(measure.measureText(text).width);
  }
  // A topic's name and a relation's line are made the first time they are shown: a large map
  // names and ties few of its thousands of topics until zoomed, and the first paint makes only those.
  function tagOf(n) {
    if (!n.tag) {
      n.tag = s("text", "decoy-map-label", gLabels);
      n.tag.textContent = n.text;
      n.tag.dataset.node = n.id;
    }
    return n.tag;
  }
  function widthOf(n, bold) {
    if (n.w === undefined) [n.w, n.wb] = [textWidth(n.text, false), textWidth(n.text, true)];
    return bold ? n.wb : n.w;
  }
  function lineOf(e) {
    if (!e.line) e.line = s("line", e.inferred ? "decoy-map-edge inferred" : "decoy-map-edge", gEdges);
    return e.line;
  }
  const hideTag = (n) => n.tag && show(n.tag, false);

  function build() {
    nodes = (model.get("nodes") || []).map((n) => ({ ...n }));
    byId = new Map(nodes.map((n) => [n.id, n]));
    kids = new Map(nodes.map((n) => [n.id, []]));
    for (const n of nodes) if (n.parent && kids.has(n.parent)) kids.get(n.parent).push(n.id);
    edges = (model.get("edges") || []).filter((e) => byId.has(e.source) && byId.has(e.target)).map((e) => ({ ...e }));
    incident = new Map(nodes.map((n) => [n.id, []]));
    for (const e of edges) {
      incident.get(e.source).push(e);
      if (e.target !== e.source) incident.get(e.target).push(e);
    }
    gEdges.replaceChildren();
    gNodes.replaceChildren();
    gLabels.replaceChildren();
    clusters = (model.get("clusters") || []).map((c) => ({ ...c }));
    large = clusters.length > 0;
    root.classList.toggle("large", large);
    gClusters.replaceChildren();
    for (const c of clusters) {
      c.circle = s("circle", `decoy-map-cluster level-${Math.min(c.level, 3)}${c.node ? "" : " of-type"}`, gClusters);
      c.circle.setAttribute("fill", c.color);
      c.circle.setAttribute("stroke", c.color);
      c.circle.dataset.cluster = c.id;
      c.text = c.level === 1 ? `${c.name} · ${plural(c.topics, "topic")}` : `${c.name} · ${c.topics}`;
      c.w = textWidth(c.text, true);
      c.tag = s("text", "decoy-map-label decoy-map-cluster-label bold", gLabels);
      c.tag.textContent = c.text;
      c.tag.dataset.cluster = c.id;
    }
    grid = new Map();
    if (large) for (const n of nodes) {
      const key = Math.floor(n.x / CELL) + "," + Math.floor(n.y / CELL);
      (grid.get(key) || grid.set(key, []).get(key)).push(n);
    }
    for (const e of edges) e.line = null;
    const most = Math.max(1, ...nodes.map((n) => n.memories));
    for (const n of nodes) {
      n.r = n.kind === "user" ? 16 : 4 + 12 * Math.sqrt(n.memories / most);
      n.shown = true;
      n.text = n.kind === "user" ? n.name : n.memories ? `${n.label} (${n.memories})` : n.label;
      n.w = n.wb = undefined;
      n.dot = s("circle", "decoy-map-node kind-" + n.kind, gNodes);
      n.dot.setAttribute("fill", n.color);
      n.dot.dataset.node = n.id;
      n.tag = null;
    }
    const types = [...new Set(nodes.filter((n) => n.kind === "topic").map((n) => n.type))].sort();
    legend.replaceChildren();
    h("span", "decoy-map-legend-title", legend).textContent = large
      ? "topic type (size: memories; a circle: a topic and what it includes, dashed: one type):"
      : "topic type (size: memories):";
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
    const rims = clusters.filter((c) => c.level === 1);
    const xs = shown.map((n) => n.x).concat(rims.flatMap((c) => [c.x - c.r, c.x + c.r]));
    const ys = shown.map((n) => -n.y).concat(rims.flatMap((c) => [-c.y - c.r, -c.y + c.r]));
    const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    const bottom = legend.offsetHeight + 8; // the legend runs along the foot: keep the drawing above it
    const pad = large ? 20 : 36;
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
  // A topic picked or ringed: its dot, its edges and the names change, nothing moves. Restyling
  // those (not 2,000 dots) keeps a pick on a large map from redrawing and re-laying out them all.
  function restyleSoon() {
    picked = true;
    relabel();
  }
  const relabel = perFrame(draw);

  function draw() {
    if (!fitted && !fit()) return;
    const W = stage.clientWidth, H = stage.clientHeight;
    const hidden = hiddenSet();
    const selected = model.get("selected"), ringed = model.get("ringed");
    const collapsed = new Set(model.get("collapsed") || []);
    const dim = matches.size > 0;
    if (moved) (large ? drawLarge : drawGraph)(hidden, selected, ringed, collapsed, dim, W, H);
    else if (picked) restyle(hidden, selected, ringed, collapsed, dim, W, H);
    moved = picked = false;
    styled = { selected, ringed };
    (large ? placeLarge : placeLabels)(W, H, hidden, selected, ringed);
  }

  // Relation labels: only on the picked topic's own relations (readable at any size).
  function relationLabels(hidden, selected) {
    gRel.replaceChildren();
    if (!selected || !byId.has(selected) || hidden.has(selected)) return;
    for (const e of incident.get(selected) || []) {
      if (!e.relation) continue;
      const a = byId.get(e.source), b = byId.get(e.target);
      if (hidden.has(a.id) || hidden.has(b.id)) continue;
      const t = s("text", "decoy-map-relation", gRel);
      t.textContent = e.relation;
      t.setAttribute("x", (sx(a) + sx(b)) / 2);
      t.setAttribute("y", (sy(a) + sy(b)) / 2 - 3);
    }
  }

  function drawGraph(hidden, selected, ringed, collapsed, dim) {
    for (const e of edges) edgeOfGraph(e, hidden, selected);
    relationLabels(hidden, selected);
    const zoom = Math.max(0.6, Math.min(2.5, Math.sqrt(view.k / (fitK || view.k))));
    for (const n of nodes) {
      const off = hidden.has(n.id);
      n.dot.style.display = off ? "none" : "";
      if (off) continue;
      n.sr = n.r * zoom;
      n.dot.setAttribute("cx", sx(n));
      n.dot.setAttribute("cy", sy(n));
      n.dot.setAttribute("r", n.sr);
      styleDot(n, selected, ringed, collapsed, dim);
    }
  }
  function edgeOfGraph(e, hidden, selected) {
    const a = byId.get(e.source), b = byId.get(e.target);
    const off = hidden.has(a.id) || hidden.has(b.id);
    if (off) {
      if (e.line) e.line.style.display = "none";
      return;
    }
    const line = lineOf(e);
    line.style.display = "";
    line.setAttribute("x1", sx(a));
    line.setAttribute("y1", sy(a));
    line.setAttribute("x2", sx(b));
    line.setAttribute("y2", sy(b));
    const near = selected && (a.id === selected || b.id === selected);
    line.classList.toggle("near", !!near);
  }
  function styleDot(n, selected, ringed, collapsed, dim) {
    const cls = n.dot.classList;
    cls.toggle("selected", n.id === selected);
    cls.toggle("ringed", n.id === ringed);
    cls.toggle("match", matches.has(n.id));
    cls.toggle("faded", dim && !matches.has(n.id));
    cls.toggle("collapsed", collapsed.has(n.id) && (kids.get(n.id) || []).length > 0);
  }

  // What a new pick or ring changes, the rest as drawn: the dots of the topics picked and ringed
  // before and now, the edges of those picked (shown on a large map while their topic is picked),
  // the clusters of those picked, and the picked topic's relation labels.
  function restyle(hidden, selected, ringed, collapsed, dim, W, H) {
    const picks = new Set([styled.selected, selected].filter(Boolean));
    for (const id of new Set([...picks, styled.ringed, ringed])) {
      const n = id && byId.get(id);
      if (n && !hidden.has(n.id)) styleDot(n, selected, ringed, collapsed, dim);
    }
    const inner = slotPx() >= EDGE_SLOT;
    for (const id of picks)
      for (const e of incident.get(id) || []) large ? edgeOfLarge(e, hidden, selected, inner, W, H) : edgeOfGraph(e, hidden, selected);
    if (large) for (const c of clusters) if (c.node && picks.has(c.node)) c.circle.classList.toggle("selected", c.node === selected);
    relationLabels(hidden, selected);
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
    for (const n of nodes) if (hidden.has(n.id)) hideTag(n);
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
      const w = widthOf(n, bold);
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
        hideTag(n);
        continue;
      }
      const placed = { ...box, id: null }; // a placed label blocks every later one
      for (const k of keys(placed)) (grid.get(k) || grid.set(k, []).get(k)).push(placed);
      const tag = tagOf(n);
      tag.style.display = "";
      tag.setAttribute("x", box.x);
      tag.setAttribute("y", box.y + LABEL_H - 3);
      tag.classList.toggle("bold", bold);
      tag.classList.toggle("on-dot", n.kind === "user");
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

  // -- a large map: clusters first, topics as they get room ----------------------------------
  const slotPx = () => view.k * slot;
  const onScreen = (x, y, r, W, H) => x + r >= 0 && y + r >= 0 && x - r <= W && y - r <= H;
  function show(el, on) {
    const want = on ? "" : "none";
    if (el.style.display !== want) el.style.display = want;
  }

  function drawLarge(hidden, selected, ringed, collapsed, dim, W, H) {
    for (const c of clusters) {
      const x = c.x * view.k + view.tx, y = -c.y * view.k + view.ty, r = c.r * view.k;
      const on = r >= 2 && onScreen(x, y, r, W, H) && !(c.node && hidden.has(c.node));
      show(c.circle, on);
      if (!on) continue;
      c.circle.setAttribute("cx", x);
      c.circle.setAttribute("cy", y);
      c.circle.setAttribute("r", r);
      c.circle.classList.toggle("selected", !!c.node && c.node === selected);
    }
    const inner = slotPx() >= EDGE_SLOT;
    for (const e of edges) edgeOfLarge(e, hidden, selected, inner, W, H);
    relationLabels(hidden, selected);
    for (const n of nodes) {
      const x = sx(n), y = sy(n);
      n.sr = n.kind === "user" ? Math.max(12, 2.25 * view.k) : Math.max(MIN_DOT, (n.dot_r || 0.5) * view.k);
      const on = !hidden.has(n.id) && onScreen(x, y, n.sr, W, H);
      show(n.dot, on);
      n.shown = on;
      if (!on) continue;
      n.dot.setAttribute("cx", x);
      n.dot.setAttribute("cy", y);
      n.dot.setAttribute("r", n.sr);
      styleDot(n, selected, ringed, collapsed, dim);
    }
  }
  // A large map shows an edge while one of its topics is picked (and a spoke once zoomed in).
  function edgeOfLarge(e, hidden, selected, inner, W, H) {
    const a = byId.get(e.source), b = byId.get(e.target);
    const near = !!selected && (a.id === selected || b.id === selected);
    let on = (near || (inner && e.spoke)) && !hidden.has(a.id) && !hidden.has(b.id);
    const x1 = sx(a), y1 = sy(a), x2 = sx(b), y2 = sy(b);
    on = on && Math.max(x1, x2) >= 0 && Math.max(y1, y2) >= 0 && Math.min(x1, x2) <= W && Math.min(y1, y2) <= H;
    if (!on) {
      if (e.line) show(e.line, false);
      return;
    }
    const line = lineOf(e);
    show(line, true);
    line.setAttribute("x1", x1);
    line.setAttribute("y1", y1);
    line.setAttribute("x2", x2);
    line.setAttribute("y2", y2);
    line.classList.toggle("near", near);
  }

  // Names, placed greedily in screen space: the clusters' first (largest first, on their top
  // rim), then the picked, ringed, hovered and found topics wherever they are, then — once a
  // slot is LABEL_SLOT px wide — every topic on screen, most memories first.
  function placeLarge(W, H, hidden, selected, ringed) {
    const lg = legend.getBoundingClientRect(), st = stage.getBoundingClientRect();
    const board = new Board(W, H, { x: lg.left - st.left - 2, y: lg.top - st.top - 2, w: lg.width + 4, h: lg.height + 4 });
    const forced = (n) => n.id === selected || n.id === ringed || n.id === hovered || matches.has(n.id);
    const roomy = slotPx() >= LABEL_SLOT;
    const want = nodes.filter((n) => n.shown && (forced(n) || n.kind === "user" || roomy || n.sr >= BIG_DOT));
    const dot = (n) => board.take({ x: sx(n) - n.sr, y: sy(n) - n.sr, w: 2 * n.sr, h: 2 * n.sr, id: n.id });
    let named = 0;
    const rank = (n) => (n.id === selected ? 0 : n.id === ringed ? 1 : n.id === hovered ? 2 : matches.has(n.id) ? 3 : n.kind === "user" ? 4 : 5);
    const first = want.filter((n) => rank(n) < 5).sort((a, b) => rank(a) - rank(b) || b.memories - a.memories);
    // The picked, ringed, hovered and found are named first, over any other dot if need be; then
    // every dot to be named is an obstacle: no later name covers one.
    for (const n of first) dot(n);
    for (const n of first) named += placeTopic(n, board, selected, ringed);
    for (const n of want) if (rank(n) === 5) dot(n);
    let clusterNames = 0;
    const rest = want.filter((n) => rank(n) === 5).sort((a, b) => b.memories - a.memories || (a.name < b.name ? -1 : 1));
    const order = clusters.slice().sort((a, b) => a.level - b.level || b.topics - a.topics);
    for (const c of order.filter((c) => c.level === 1)) clusterNames += placeCluster(c, board, hidden, W, H);
    for (const n of rest) named += placeTopic(n, board, selected, ringed);
    for (const c of order.filter((c) => c.level > 1)) clusterNames += placeCluster(c, board, hidden, W, H);
    const placed = new Set([...first, ...rest].filter((n) => n.tag && n.tag.style.display !== "none").map((n) => n.id));
    for (const n of nodes) if (!placed.has(n.id)) hideTag(n);
    const total = nodes.filter((n) => n.kind === "topic").length;
    const folded = [...hidden].length;
    status.textContent =
      `${plural(total, "topic")} in ${plural(clusters.filter((c) => c.level === 1).length, "cluster")}` +
      (folded ? ` (${folded} folded away)` : "") +
      ` · ${named.toLocaleString("en")} topics named` +
      (roomy ? "" : `, zoom in for the rest (hover or find any topic)`);
    status.dataset.named = named;
    status.dataset.clustersNamed = clusterNames;
  }

  // A cluster's name on its top rim, else just inside it, across its middle, inside its foot or
  // under it, where it fits.
  function placeCluster(c, board, hidden, W, H) {
    const r = c.r * view.k, x = c.x * view.k + view.tx, y = -c.y * view.k + view.ty;
    const small = r < (c.level === 1 ? 12 : 30) || c.w > 6 * r;
    const off = (c.node && hidden.has(c.node)) || !onScreen(x, y, r, W, H);
    const spots = small || off ? [] : [
      { x: x - c.w / 2, y: y - r - LABEL_H - 1, w: c.w, h: LABEL_H },
      { x: x - c.w / 2, y: y - r + 3, w: c.w, h: LABEL_H },
      { x: x - c.w / 2, y: y - LABEL_H / 2, w: c.w, h: LABEL_H },
      { x: x - c.w / 2, y: y + r - LABEL_H - 3, w: c.w, h: LABEL_H },
      { x: x - c.w / 2, y: y + r + 1, w: c.w, h: LABEL_H },
    ];
    const box = spots.find((b) => board.free(b));
    show(c.tag, !!box);
    if (!box) return 0;
    board.take(box);
    c.tag.setAttribute("x", box.x);
    c.tag.setAttribute("y", box.y + LABEL_H - 3);
    return 1;
  }

  function placeTopic(n, board, selected, ringed) {
    const bold = n.id === selected || n.id === ringed;
    const w = widthOf(n, bold), x = sx(n), y = sy(n);
    const spots = n.kind === "user"
      ? [{ x: x - w / 2, y: y - LABEL_H / 2, w, h: LABEL_H }]
      : [
          { x: x + n.sr + 3, y: y - LABEL_H / 2, w, h: LABEL_H },
          { x: x - n.sr - 3 - w, y: y - LABEL_H / 2, w, h: LABEL_H },
          { x: x - w / 2, y: y - n.sr - 2 - LABEL_H, w, h: LABEL_H },
          { x: x - w / 2, y: y + n.sr + 2, w, h: LABEL_H },
        ];
    const box = spots.find((b) => board.free(b, n.id));
    if (!box) {
      hideTag(n);
      return 0;
    }
    const tag = tagOf(n);
    show(tag, true);
    board.take(box);
    tag.setAttribute("x", box.x);
    tag.setAttribute("y", box.y + LABEL_H - 3);
    tag.classList.toggle("bold", bold);
    tag.classList.toggle("on-dot", n.kind === "user");
    return n.kind === "user" ? 0 : 1;
  }

  // The topic whose dot is nearest the pointer (within NEAR px of its rim), else null.
  function nearest(px, py) {
    const x = (px - view.tx) / view.k, y = -(py - view.ty) / view.k;
    const near = Math.min(NEAR, Math.max(3, 0.6 * slotPx())); // tight while dots are specks: the ground between them zooms
    const reach = near / view.k + slot;
    let best = null, bestD = Infinity;
    for (let gx = Math.floor((x - reach) / CELL); gx <= Math.floor((x + reach) / CELL); gx++)
      for (let gy = Math.floor((y - reach) / CELL); gy <= Math.floor((y + reach) / CELL); gy++)
        for (const n of grid.get(gx + "," + gy) || []) {
          if (!n.shown) continue;
          const d = Math.hypot(n.x - x, n.y - y) * view.k - n.sr;
          if (d <= near && d < bestD) [best, bestD] = [n, d];
        }
    return best;
  }
  // The innermost cluster under the pointer, else null.
  function clusterAt(px, py) {
    const x = (px - view.tx) / view.k, y = -(py - view.ty) / view.k;
    let best = null;
    for (const c of clusters)
      if (Math.hypot(c.x - x, c.y - y) <= c.r && (!best || c.level > best.level)) best = c;
    return best;
  }
  function clusterTip(c, ev) {
    if (hovered) relabel();
    hovered = null;
    markCluster(c);
    const inside = c.parent ? (clusters.find((o) => o.id === c.parent) || {}).name : "You";
    tip.replaceChildren();
    h("div", "decoy-map-tip-name", tip).textContent = c.name;
    const table = h("table", "", tip);
    const rows = [
      ["cluster", c.node ? "a topic and what it includes" : `the ${c.type || "untyped"} topics hanging from ${inside}`],
      ["topics", c.topics.toLocaleString("en")],
      ["memories", c.memories.toLocaleString("en")],
      ["", "click to zoom in"],
    ];
    for (const [k, v] of rows) {
      const tr = h("tr", "", table);
      h("th", "", tr).textContent = k;
      h("td", "", tr).textContent = v;
    }
    tip.style.display = "block";
    moveTip(ev);
  }
  function markCluster(c) {
    const was = clusters.find((o) => o.id === hoveredCluster);
    if (was) was.circle.classList.remove("hovered");
    hoveredCluster = c ? c.id : null;
    if (c) c.circle.classList.add("hovered");
  }
  function zoomTo(c) {
    const W = stage.clientWidth, H = stage.clientHeight - legend.offsetHeight - 8;
    view.k = Math.min(W, H) / (2.2 * c.r);
    view.tx = W / 2 - c.x * view.k;
    view.ty = H / 2 + c.y * view.k;
    schedule();
  }

  // -- details on hover ---------------------------------------------------------------------
  function showTip(n, ev) {
    markCluster(null);
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
    markCluster(null);
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
  const local = (ev) => {
    const st = stage.getBoundingClientRect();
    return [ev.clientX - st.left, ev.clientY - st.top];
  };
  // The dot under the pointer, else on a large map the nearest one (tiny ones answer too).
  const under = (ev) => target(ev) || (large ? nearest(...local(ev)) : null);
  svg.addEventListener("click", (ev) => {
    if (drag && drag.moved) return;
    const n = under(ev);
    const c = !n && large ? clusterAt(...local(ev)) : null;
    if (c && c.r * view.k < 0.45 * Math.min(stage.clientWidth, stage.clientHeight)) return zoomTo(c);
    model.set("selected", n ? n.id : "");
    model.save_changes();
  });
  svg.addEventListener("dblclick", (ev) => {
    const n = under(ev);
    if (!n || !(kids.get(n.id) || []).length) return;
    const now = new Set(model.get("collapsed") || []);
    now.has(n.id) ? now.delete(n.id) : now.add(n.id);
    model.set("collapsed", [...now]);
    model.save_changes();
  });
  svg.addEventListener("mouseover", (ev) => {
    const n = target(ev);
    if (n && n.id !== hovered) showTip(n, ev);
  });
  svg.addEventListener("mousemove", (ev) => {
    if (large && !(drag && drag.moved)) return hoverLarge(ev);
    if (hovered) moveTip(ev);
  });
  svg.addEventListener("mouseout", (ev) => {
    const n = target(ev);
    if (n && !(large && (nearest(...local(ev)) || {}).id === n.id)) hideTip(); // off its dot, not just off its rim
  });
  svg.addEventListener("mouseleave", () => {
    if (large && (hovered || hoveredCluster)) hideTip();
  });
  function hoverLarge(ev) {
    const n = nearest(...local(ev));
    if (n) return n.id === hovered ? moveTip(ev) : showTip(n, ev);
    const c = clusterAt(...local(ev));
    if (c) return c.id === hoveredCluster ? moveTip(ev) : clusterTip(c, ev);
    if (hovered || hoveredCluster) hideTip();
  }
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
    centre(n, large ? (LABEL_SLOT * 1.5) / slot : (fitK || view.k) * 3); // close enough to name its neighbours
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
        const parent = large && n.parent && n.parent !== "user" && byId.get(n.parent);
        b.textContent = `${n.name} (${plural(n.memories, "memory", "memories")})` + (parent ? ` in ${parent.name}` : "");
        b.dataset.node = n.id;
        b.onclick = () => pickFound(n);
      }
      if (list.length > 8) h("span", "decoy-map-found-more", found).textContent = `… ${list.length - 8} more`;
      // On a large map one match is brought into view as it is typed, close enough to be named
      // among its neighbours; picking it (Enter, a click) is still the reader's choice.
      if (large && list.length === 1) return centre(list[0], (LABEL_SLOT * 1.5) / slot);
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

  let rebuilding = false; // nodes, edges and clusters change together: build once for all three
  const onNodes = () => {
    if (rebuilding) return;
    rebuilding = true;
    queueMicrotask(() => {
      rebuilding = false;
      build();
    });
  };
  const onSelected = () => {
    reveal(model.get("selected")); // (moves the view, and redraws it all, only when off screen)
    restyleSoon();
  };
  const onRinged = () => {
    reveal(model.get("ringed"));
    restyleSoon();
  };
  const onCollapsed = () => {
    if (hovered && byId.has(hovered)) fillTip(byId.get(hovered)); // "fold" now reads "unfold"
    schedule();
  };
  const unlisten = listen(model, {
    "change:nodes": onNodes,
    "change:edges": onNodes,
    "change:clusters": onNodes,
    "change:selected": onSelected,
    "change:ringed": onRinged,
    "change:collapsed": onCollapsed,
  });
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
    unlisten();
  };
}

export default { render };
