// The memory table: all rows arrive once (trait `rows`, one list per column); filtering,
// sorting and scrolling happen here. Only the rows in view are in the page (virtual
// scrolling), each text clamped to one line; the picked row's details hold its whole text.
// The rule that picks the rows is written again in grid.py (MemoryGrid.shown_positions), so
// Python's count is the count on screen.
//
// It is a WAI-ARIA grid: role=grid/row/columnheader/gridcell, aria-rowcount and aria-rowindex
// over all the rows the filters keep (not only those in the page), aria-sort on the sorted
// column. The grid holds the focus and names its active row with aria-activedescendant (rows
// come and go as it scrolls): ↑/↓, PageUp/PageDown and Home/End move the active row
// (aria-selected), Enter or Space opens its details.
const ROW = 26;
// key, title, widest width (px) a column takes before its values are cut; text takes the rest
const COLUMNS = [
  ["text", "text", 0],
  ["topic", "topic", 220],
  ["categories", "categories", 200],
  ["mine", "mine", 60],
  ["updated", "updated", 160],
];
const DETAILS = [
  ["id", "id"], ["topic", "topic"], ["topic_id", "topic id"], ["account", "about the account"],
  ["categories", "categories"],
  ["rev", "rev"], ["kid", "kid"], ["via", "visible because (via)"], ["mine", "mine"],
  ["author_kind", "author"], ["source", "stored in"], ["created", "created"], ["updated", "updated"],
];
const CLAMP = 240; // characters of a text put in a cell; the details show all of it
const PAD = 14; // a cell's padding, both sides, and a little air
let grids = 0; // ids of rows are unique in the page, however many tables it shows

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
  if (col === "mine") return v ? "yes" : "no";
  if (col === "source") return v === "space" ? "a legacy space" : "the memory store";
  return v == null ? "" : String(v);
}
// What the filter box looks in: the same words as grid.search_keys.
function searchKey(rows, i) {
  return [rows.text[i], rows.topic[i], (rows.above || [])[i] || "", (rows.categories[i] || []).join(" ")]
    .join("\n").toLowerCase();
}

// Column widths from the values themselves: each column as wide as its widest value (its title
// included, capped). `mine` and `updated` are never cut; when the table is narrow, topic and
// categories give up room (down to FLOOR, cut with "…" and whole in the tooltip) before the
// text column goes under TEXT_SHARE of the width. One template for the header and the rows.
const FLOOR = 72, TEXT_SHARE = 0.34;
function natural(type, rows, n) {
  const ctx = document.createElement("canvas").getContext("2d");
  const measure = (font, s) => { ctx.font = font; return ctx.measureText(s).width; };
  const plain = type;
  const bold = `600 ${plain}`;
  const out = {};
  for (const [key, title, most] of COLUMNS) {
    if (!most) continue;
    let w = measure(bold, title + " ▲");
    const seen = new Set();
    for (let i = 0; i < n && w < most && seen.size < 1000; i++) {
      const s = cell(key, rows, i);
      if (seen.has(s)) continue;
      seen.add(s);
      w = Math.max(w, measure(plain, s));
    }
    out[key] = Math.ceil(Math.min(w, most) + PAD);
  }
  return out;
}
function template(want, width) {
  const fixed = want.mine + want.updated;
  const flexible = want.topic + want.categories;
  const room = Math.max(2 * FLOOR, width * (1 - TEXT_SHARE) - fixed);
  const scale = flexible > room ? room / flexible : 1;
  const fit = (w) => Math.max(FLOOR, Math.floor(w * scale)) + "px";
  return `minmax(6em, 1fr) ${fit(want.topic)} ${fit(want.categories)} ${want.mine}px ${want.updated}px`;
}

function render({ model, el }) {
  const gid = `decoy-grid-${++grids}`;
  const root = h("div", "decoy-grid", el);
  const bar = h("div", "decoy-grid-bar", root);
  const search = h("input", "decoy-grid-search", bar);
  search.type = "search";
  search.placeholder = "filter by text, topic or category";
  search.setAttribute("aria-label", "filter the memories by text, topic or category");
  const count = h("span", "decoy-grid-count", bar);
  count.setAttribute("aria-live", "polite");
  const table = h("div", "decoy-grid-table", root);
  table.setAttribute("role", "grid");
  table.setAttribute("aria-label", "memories");
  table.setAttribute("aria-colcount", COLUMNS.length);
  table.tabIndex = 0;
  table.dataset.lmSuppressShortcuts = "true"; // JupyterLab leaves its keys to the grid
  const head = h("div", "decoy-grid-head", table);
  head.setAttribute("role", "row");
  head.setAttribute("aria-rowindex", "1");
  const body = h("div", "decoy-grid-body", table);
  body.setAttribute("role", "rowgroup");
  const spacer = h("div", "decoy-grid-spacer", body);
  spacer.setAttribute("role", "presentation");
  const win = h("div", "decoy-grid-rows", spacer);
  win.setAttribute("role", "presentation");
  const empty = h("div", "decoy-grid-empty", root);
  const details = h("div", "decoy-grid-details", root);
  details.setAttribute("role", "region");
  details.setAttribute("aria-label", "the picked memory");

  let rows = {}, n = 0, keys = [], order = [], active = "", want = null, width = 0;
  let drawn = ""; // what the rows in the page show: unchanged, they stay (a click between
  // mousedown and mouseup must land on the row it started on)
  const heads = {};
  for (const [key, title] of COLUMNS) {
    const th = h("div", "decoy-grid-th col-" + key, head);
    th.setAttribute("role", "columnheader");
    th.dataset.col = key;
    const button = h("button", "decoy-grid-sort", th);
    button.type = "button";
    button.textContent = title;
    button.title = "sort by " + title;
    th.onclick = () => {
      const [col, way] = (model.get("sort") || "").split(":");
      const next = col !== key ? key + ":asc" : way === "asc" ? key + ":desc" : "";
      model.set("sort", next);
      model.save_changes();
    };
    heads[key] = th;
  }

  // Widths need the page's font and the table's width: set once it is in the page, and again
  // when its width changes.
  function size() {
    if (!root.isConnected || !table.clientWidth) return;
    const style = getComputedStyle(root);
    const type = `${style.fontSize} ${style.fontFamily}`; // a theme or a late font changes it
    if (!want || want.type !== type) {
      want = { ...natural(type, rows, n), type };
      width = 0;
    }
    if (table.clientWidth === width) return;
    width = table.clientWidth;
    root.style.setProperty("--decoy-grid-columns", template(want, width));
  }
  const resized = new ResizeObserver(() => size());
  resized.observe(table);
  document.fonts.ready.then(() => size());

  function load() {
    rows = model.get("rows") || {};
    n = (rows.id || []).length;
    keys = Array.from({ length: n }, (_, i) => searchKey(rows, i));
    want = null;
    width = 0;
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
      if (q && !keys[i].includes(q)) continue;
      out.push(i);
    }
    const [col, way] = (model.get("sort") || "").split(":");
    for (const [key] of COLUMNS) {
      const sorted = key === col && rows[col];
      heads[key].dataset.sort = sorted ? way : "";
      if (sorted) heads[key].setAttribute("aria-sort", way === "desc" ? "descending" : "ascending");
      else heads[key].removeAttribute("aria-sort");
    }
    if (rows[col]) {
      const key = (i) => {
        const v = rows[col][i];
        return Array.isArray(v) ? v.join(", ") : String(v).toLowerCase();
      };
      const sortKeys = new Map(out.map((i) => [i, key(i)]));
      const dir = way === "desc" ? -1 : 1;
      out.sort((a, b) => {
        const ka = sortKeys.get(a), kb = sortKeys.get(b);
        return ka < kb ? -dir : ka > kb ? dir : a - b;
      });
    }
    order = out;
    drawn = "";
    table.setAttribute("aria-rowcount", order.length + 1);
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
      if (q) why.push(`matching “${q}” in its text, topic or categories`);
      empty.textContent = `No memory ${why.join(", ")}: ${plural(n, "memory", "memories")} in all.`;
    }
    paint();
    showDetails();
  }

  function paint() {
    size();
    const first = Math.max(0, Math.floor(body.scrollTop / ROW) - 5);
    const last = Math.min(order.length, first + Math.ceil((body.clientHeight || 360) / ROW) + 10);
    win.style.top = first * ROW + "px";
    const picked = model.get("picked");
    const now = `${first}:${last}:${picked}:${active}`;
    if (now === drawn) return;
    drawn = now;
    const frag = document.createDocumentFragment();
    let current = "";
    for (let p = first; p < last; p++) {
      const i = order[p];
      const tr = h("div", "decoy-grid-row", frag);
      tr.setAttribute("role", "row");
      tr.setAttribute("aria-rowindex", p + 2);
      tr.id = `${gid}-row-${p}`;
      tr.dataset.id = rows.id[i];
      tr.dataset.pos = p;
      if (rows.id[i] === picked) tr.classList.add("picked");
      const on = rows.id[i] === active;
      tr.setAttribute("aria-selected", on ? "true" : "false");
      if (on) {
        tr.classList.add("active");
        current = tr.id;
      }
      for (const [key] of COLUMNS) {
        const td = h("div", "decoy-grid-td col-" + key, tr);
        td.setAttribute("role", "gridcell");
        const text = cell(key, rows, i);
        td.textContent = text.length > CLAMP ? text.slice(0, CLAMP) + "…" : text;
        if (key !== "mine") td.title = text.slice(0, 1000);
      }
    }
    win.replaceChildren(frag);
    if (current) table.setAttribute("aria-activedescendant", current);
    else table.removeAttribute("aria-activedescendant");
  }

  function showDetails() {
    const id = model.get("picked");
    const i = id ? rows.id.indexOf(id) : -1;
    details.replaceChildren();
    if (i < 0) {
      h("div", "decoy-grid-hint", details).textContent = n
        ? "Click a row (or move to it with ↑/↓ and press Enter) to see the whole memory."
        : "";
      return;
    }
    const text = h("div", "decoy-grid-text", details);
    text.textContent = rows.text[i];
    const fields = h("table", "decoy-grid-fields", details);
    for (const [key, title] of DETAILS) {
      const tr = h("tr", "", fields);
      h("th", "", tr).textContent = title;
      h("td", "", tr).textContent = cell(key, rows, i);
    }
    if (order.indexOf(i) < 0) h("div", "decoy-grid-hint", details).textContent = "(not among the rows the filters show)";
  }

  function pick(id) {
    model.set("picked", id);
    const i = rows.id.indexOf(id);
    model.set("picked_topic", i < 0 ? "" : rows.node[i]);
    model.save_changes();
  }
  // Make position `p` the active row, scrolled into view.
  function activate(p) {
    if (!order.length) return;
    p = Math.max(0, Math.min(order.length - 1, p));
    active = rows.id[order[p]];
    const top = p * ROW;
    if (top < body.scrollTop) body.scrollTop = top;
    else if (top + ROW > body.scrollTop + body.clientHeight) body.scrollTop = top + ROW - body.clientHeight;
    paint();
  }
  const activeAt = () => order.indexOf(rows.id.indexOf(active));
  win.addEventListener("click", (ev) => {
    const tr = ev.target.closest(".decoy-grid-row");
    if (!tr) return;
    active = tr.dataset.id;
    pick(tr.dataset.id);
    table.focus({ preventScroll: true });
  });
  // Tabbing in makes a row active; a click does it itself (repainting under the pointer
  // between mousedown and mouseup would lose the click).
  table.addEventListener("focus", (ev) => {
    if (ev.target !== table || !table.matches(":focus-visible")) return;
    if ((active && activeAt() >= 0) || !order.length) return;
    const at = order.indexOf(rows.id.indexOf(model.get("picked")));
    activate(at >= 0 ? at : 0);
  });
  table.addEventListener("keydown", (ev) => {
    if (ev.target !== table) return; // the sort buttons keep their own keys
    const at = activeAt();
    const page = Math.max(1, Math.floor((body.clientHeight || 360) / ROW) - 1);
    const moves = {
      ArrowDown: at < 0 ? 0 : at + 1,
      ArrowUp: at < 0 ? 0 : at - 1,
      PageDown: Math.max(at, 0) + page,
      PageUp: at - page,
      Home: 0,
      End: order.length - 1,
    };
    if (ev.key in moves) {
      ev.preventDefault();
      ev.stopPropagation(); // JupyterLab's notebook would take ↑/↓ as "select the next cell"
      activate(moves[ev.key]);
    } else if ((ev.key === "Enter" || ev.key === " ") && at >= 0) {
      ev.preventDefault();
      ev.stopPropagation();
      pick(active);
    }
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
  // The first paint may come before the table is in the page: size it once it is.
  let frames = 0;
  const settle = () => (root.isConnected ? paint() : ++frames < 600 && requestAnimationFrame(settle));
  requestAnimationFrame(settle);
  return () => {
    resized.disconnect();
    for (const e of names) model.off(e, onFilter);
    model.off("change:search", onFilter);
    model.off("change:rows", load);
    model.off("change:picked", onPicked);
  };
}

export default { render };
