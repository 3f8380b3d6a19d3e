// The memory table: all rows arrive once (trait `rows`, one list per column); filtering,
// sorting and scrolling happen here. Only the rows in view are in the page (virtual
// scrolling), each text clamped to one line; the picked row's details hold its whole text.
// The rule that picks the rows is written again in grid.py (MemoryGrid.shown_positions), so
// Python's count is the count on screen.
const ROW = 26;
const COLUMNS = [
  ["text", "text", "46%"],
  ["topic", "topic", "18%"],
  ["categories", "categories", "16%"],
  ["mine", "mine", "6%"],
  ["updated", "updated", "14%"],
];
const DETAILS = [
  ["id", "id"], ["topic", "topic"], ["topic_id", "topic id"], ["account", "about the account"],
  ["categories", "categories"],
  ["rev", "rev"], ["kid", "kid"], ["via", "visible because (via)"], ["mine", "mine"],
  ["author_kind", "author"], ["source", "stored in"], ["created", "created"], ["updated", "updated"],
];
const CLAMP = 240; // characters of a text put in a cell; the details show all of it

function h(tag, cls, parent) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (parent) parent.appendChild(e);
  return e;
}
function plural(n, one, many) {
  return `${n.toLocaleString("en")} ${n === 1 ? one : many || one + "s"}`;
}
function countText(shown, total, space) {
  const all = plural(total, "memory", "memories");
  return (shown === total ? all : `${shown.toLocaleString("en")} of ${all} shown`) +
    (space ? ` (${space.toLocaleString("en")} from legacy space rows)` : "");
}
function cell(col, rows, i) {
  const v = rows[col][i];
  if (col === "categories" || col === "via") return (v || []).join(", ");
  if (col === "mine") return v ? "✓" : "";
  if (col === "source") return v === "space" ? "a legacy space" : "the memory store";
  return v == null ? "" : String(v);
}

function render({ model, el }) {
  const root = h("div", "decoy-grid", el);
  const bar = h("div", "decoy-grid-bar", root);
  const search = h("input", "decoy-grid-search", bar);
  search.type = "search";
  search.placeholder = "filter the text as you type";
  search.setAttribute("aria-label", "filter the text as you type");
  const count = h("span", "decoy-grid-count", bar);
  const head = h("div", "decoy-grid-head", root);
  const body = h("div", "decoy-grid-body", root);
  body.tabIndex = 0;
  const spacer = h("div", "decoy-grid-spacer", body);
  const win = h("div", "decoy-grid-rows", spacer);
  const empty = h("div", "decoy-grid-empty", root);
  const details = h("div", "decoy-grid-details", root);

  let rows = {}, n = 0, lower = [], order = [];
  const heads = {};
  for (const [key, title, width] of COLUMNS) {
    const th = h("div", "decoy-grid-th", head);
    th.style.width = width;
    th.dataset.col = key;
    th.textContent = title;
    th.title = "sort by " + title;
    th.onclick = () => {
      const [col, way] = (model.get("sort") || "").split(":");
      const next = col !== key ? key + ":asc" : way === "asc" ? key + ":desc" : "";
      model.set("sort", next);
      model.save_changes();
    };
    heads[key] = th;
  }

  function load() {
    rows = model.get("rows") || {};
    n = (rows.id || []).length;
    lower = (rows.text || []).map((t) => t.toLowerCase());
    refilter();
  }

  function refilter() {
    const topic = model.get("topic"), category = model.get("category"), mine = model.get("mine");
    const q = (model.get("search") || "").trim().toLowerCase();
    const out = [];
    for (let i = 0; i < n; i++) {
      if (topic && rows.node[i] !== topic) continue;
      if (category && !rows.categories[i].includes(category)) continue;
      if (mine && !rows.mine[i]) continue;
      if (q && !lower[i].includes(q)) continue;
      out.push(i);
    }
    const [col, way] = (model.get("sort") || "").split(":");
    for (const [key] of COLUMNS) heads[key].dataset.sort = key === col ? way : "";
    if (rows[col]) {
      const key = (i) => {
        const v = rows[col][i];
        return Array.isArray(v) ? v.join(", ") : String(v).toLowerCase();
      };
      const keys = new Map(out.map((i) => [i, key(i)]));
      const dir = way === "desc" ? -1 : 1;
      out.sort((a, b) => {
        const ka = keys.get(a), kb = keys.get(b);
        return ka < kb ? -dir : ka > kb ? dir : a - b;
      });
    }
    order = out;
    const space = order.reduce((s, i) => s + (rows.source[i] === "space" ? 1 : 0), 0);
    count.textContent = countText(order.length, n, space);
    count.dataset.shown = order.length;
    spacer.style.height = order.length * ROW + "px";
    empty.style.display = order.length ? "none" : "block";
    if (!n) empty.textContent = model.get("empty_reason") || "This vault holds no memory this connection can open.";
    else if (!order.length) {
      const why = [];
      if (topic) why.push("in the picked topic");
      if (category) why.push(`of category ${category}`);
      if (mine) why.push("saved by this connection");
      if (q) why.push(`whose text contains “${q}”`);
      empty.textContent = `No memory ${why.join(", ")}: ${plural(n, "memory", "memories")} in all.`;
    }
    paint();
    showDetails();
  }

  function paint() {
    const first = Math.max(0, Math.floor(body.scrollTop / ROW) - 5);
    const last = Math.min(order.length, first + Math.ceil((body.clientHeight || 360) / ROW) + 10);
    win.style.top = first * ROW + "px";
    const picked = model.get("picked");
    const frag = document.createDocumentFragment();
    for (let p = first; p < last; p++) {
      const i = order[p];
      const tr = h("div", "decoy-grid-row", frag);
      tr.dataset.id = rows.id[i];
      tr.dataset.pos = p;
      if (rows.id[i] === picked) tr.classList.add("picked");
      for (const [key, , width] of COLUMNS) {
        const td = h("div", "decoy-grid-td col-" + key, tr);
        td.style.width = width;
        const text = cell(key, rows, i);
        td.textContent = text.length > CLAMP ? text.slice(0, CLAMP) + "…" : text;
      }
    }
    win.replaceChildren(frag);
  }

  function showDetails() {
    const id = model.get("picked");
    const i = id ? rows.id.indexOf(id) : -1;
    details.replaceChildren();
    if (i < 0) {
      h("div", "decoy-grid-hint", details).textContent = n ? "Click a row to see the whole memory." : "";
      return;
    }
    const text = h("div", "decoy-grid-text", details);
    text.textContent = rows.text[i];
    const table = h("table", "decoy-grid-fields", details);
    for (const [key, title] of DETAILS) {
      const tr = h("tr", "", table);
      h("th", "", tr).textContent = title;
      h("td", "", tr).textContent = key === "mine" ? (rows.mine[i] ? "yes" : "no") : cell(key, rows, i);
    }
    if (order.indexOf(i) < 0) h("div", "decoy-grid-hint", details).textContent = "(not among the rows the filters show)";
  }

  function pick(id) {
    model.set("picked", id);
    const i = rows.id.indexOf(id);
    model.set("picked_topic", i < 0 ? "" : rows.node[i]);
    model.save_changes();
  }
  win.addEventListener("click", (ev) => {
    const tr = ev.target.closest(".decoy-grid-row");
    if (tr) pick(tr.dataset.id);
  });
  body.addEventListener("keydown", (ev) => {
    if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
    ev.preventDefault();
    const at = order.indexOf(rows.id.indexOf(model.get("picked")));
    const next = Math.max(0, Math.min(order.length - 1, at + (ev.key === "ArrowDown" ? 1 : -1)));
    if (!order.length) return;
    pick(rows.id[order[next]]);
    const top = next * ROW;
    if (top < body.scrollTop) body.scrollTop = top;
    else if (top + ROW > body.scrollTop + body.clientHeight) body.scrollTop = top + ROW - body.clientHeight;
  });
  let ticking = false;
  body.addEventListener("scroll", () => {
    if (ticking) return;
    ticking = true;
    requestAnimationFrame(() => {
      ticking = false;
      paint();
    });
  });
  search.value = model.get("search") || "";
  search.addEventListener("input", () => {
    model.set("search", search.value); // its change event filters the rows
    model.save_changes();
  });
  const onFilter = () => {
    if (search.value !== model.get("search")) search.value = model.get("search") || "";
    body.scrollTop = 0;
    refilter();
  };
  const onPicked = () => {
    paint();
    showDetails();
  };
  const names = ["change:topic", "change:category", "change:mine", "change:sort", "change:empty_reason"];
  for (const e of names) model.on(e, onFilter);
  model.on("change:search", onFilter);
  model.on("change:rows", load);
  model.on("change:picked", onPicked);
  load();
  return () => {
    for (const e of names) model.off(e, onFilter);
    model.off("change:search", onFilter);
    model.off("change:rows", load);
    model.off("change:picked", onPicked);
  };
}

export default { render };
