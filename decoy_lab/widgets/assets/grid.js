// The memory table. A small vault arrives whole (trait `rows`, one list per column) and is
// filtered, sorted and scrolled here. A large one is paged (trait `paging` says how many rows
// there are): `rows` holds the first page, and the page asks the kernel for the window it shows,
// plus a margin, with its filters and sort (message "window"); the kernel (grid.py, gridrows.py)
// answers with those rows and how many match. While an answer is on its way the count line says
// so and names no number it does not know. A page saved with no kernel behind it filters the
// rows it holds and says that the rest needs the kernel. Only the rows in view are in the page
// (virtual scrolling), each text clamped to one line; the picked row's details hold its whole
// text. The rule that picks the rows is written again in gridrows.py (GridRows.order), so
// Python's count is the count on screen.
//
// It is a WAI-ARIA grid: role=grid/row/columnheader/gridcell, aria-rowcount and aria-rowindex
// over all the rows the filters keep (not only those in the page; -1 while not yet known),
// aria-sort on the sorted column. The grid holds the focus and names its active row with
// aria-activedescendant (rows come and go as it scrolls): ↑/↓, PageUp/PageDown and Home/End
// move the active row (aria-selected), Enter or Space opens its details.
const ROW = 26;
const MARGIN = 100; // rows asked for above and below the window, so a scroll finds them here
const PATIENCE = 4000; // ms without an answer before the count line says it waits for the kernel
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

function countText(shown, total, space) {
  const all = plural(total, "memory", "memories");
  return (shown === total ? all : `${shown.toLocaleString("en")} of ${all} shown`) +
    (space ? ` (${space.toLocaleString("en")} from legacy space rows)` : "");
}
function cell(col, rows, i) {
  return show(col, rows[col][i]);
}
function show(col, v) {
  if (col === "categories" || col === "via") return (v || []).join(", ");
  if (col === "mine") return v ? "yes" : "no";
  if (col === "source") return v === "space" ? "a legacy space" : "the memory store";
  return v == null ? "" : String(v);
}
// What the filter box looks in: the same words as gridrows.search_keys.
function searchKey(rows, i) {
  return [rows.text[i], rows.topic[i], (rows.above || [])[i] || "", (rows.categories[i] || []).join(" ")]
    .join("\n").toLowerCase();
}

// Column widths from what the columns hold, text first. Each other column is as wide as its
// widest value or its title (capped by COLUMNS), the sort arrow counted only on the sorted
// column's title. `mine` and `updated` get exactly that, never cut and never more; the text
// column then keeps at least TEXT_SHARE of the width, topic and categories giving up room for it
// (down to FLOOR each, cut with "…" and whole in the tooltip), and takes all that is left over.
// When even that leaves the text less than its share, `updated` shows the day alone (DAY
// characters; the minute is in its tooltip and the details). One template for the header and
// the rows.
const FLOOR = 64, TEXT_SHARE = 0.45, DAY = 10;
function natural(type, rows, n) {
  const ctx = document.createElement("canvas").getContext("2d");
  const measure = (font, s) => { ctx.font = font; return ctx.measureText(s).width; };
  const plain = type;
  const bold = `600 ${plain}`;
  const out = {};
  for (const [key, title, most] of COLUMNS) {
    if (!most) continue;
    let w = 0, day = 0;
    const seen = new Set();
    for (let i = 0; i < n && w < most && seen.size < 1000; i++) {
      const s = cell(key, rows, i);
      if (seen.has(s)) continue;
      seen.add(s);
      w = Math.max(w, measure(plain, s));
      if (key === "updated") day = Math.max(day, measure(plain, s.slice(0, DAY)));
    }
    out[key] = { values: w, day, title: measure(bold, title), sorted: measure(bold, title + " ▲"), most };
  }
  return out;
}
// Each column's width (px) from its measures: its values or its title, whichever is wider.
function widths(nat, sorted) {
  const out = {};
  for (const key in nat) {
    const c = nat[key];
    const head = key === sorted ? c.sorted : c.title;
    out[key] = Math.ceil(Math.min(Math.max(c.values, head), c.most) + PAD);
    if (key === "updated") out.updatedDay = Math.ceil(Math.min(Math.max(c.day, head), c.most) + PAD);
  }
  return out;
}
// Whether `updated` shows the day alone: the text keeps its share only so.
function dayOnly(want, width) {
  return width * (1 - TEXT_SHARE) - want.mine - want.updated < 2 * FLOOR && want.updatedDay < want.updated;
}
function template(want, width, day) {
  const fixed = want.mine + (day ? want.updatedDay : want.updated);
  const flexible = want.topic + want.categories;
  const room = Math.max(2 * FLOOR, width * (1 - TEXT_SHARE) - fixed);
  const scale = flexible > room ? room / flexible : 1;
  const fit = (w) => Math.max(FLOOR, Math.floor(w * scale)) + "px";
  const updated = day ? want.updatedDay : want.updated;
  return `minmax(6em, 1fr) ${fit(want.topic)} ${fit(want.categories)} ${want.mine}px ${updated}px`;
}


// The rows the page holds, one list per column (all of them when whole), found by id.
function Store() {
  const s = { cols: {}, n: 0, byId: new Map() };
  s.hold = (rows) => {
    const ids = rows.id || [], at = [];
    if (!s.n && ids.length) {
      // the first rows: their lists as they came (a whole table's 10,000 are not copied)
      for (const key in rows) s.cols[key] = Array.from(rows[key]);
      for (let j = 0; j < ids.length; j++) if (!s.byId.has(ids[j])) s.byId.set(ids[j], j);
      s.n = ids.length;
      return Array.from({ length: s.n }, (_, j) => j);
    }
    for (let j = 0; j < ids.length; j++) {
      let i = s.byId.get(ids[j]);
      if (i === undefined) {
        i = s.n++;
        s.byId.set(ids[j], i);
        for (const key in rows) (s.cols[key] || (s.cols[key] = [])).push(rows[key][j]);
      }
      at.push(i);
    }
    return at;
  };
  return s;
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

  // A page with a kernel behind it can ask for rows; a saved page (no kernel) cannot.
  const live = !!(model.widget_manager && model.widget_manager.kernel);
  let store = Store(), keys = [], total = 0, paged = false;
  // What is on show: `order` holds the store's index of each row the filters keep (-1: not yet
  // here), `query` the filters and sort it answers, `shown`/`space` how many match (null: asked).
  let order = [], query = "", shown = null, space = 0, pickedAt = { id: "", at: -1 };
  let pending = null, seq = 0; // the query asked for and not yet answered; the last ask's number
  const asked = new Map(); // seq → {query, from, to}
  let waited = null, slow = false; // the timer that says the kernel is slow to answer, and whether it did
  let active = "", activeP = -1, nat = null, want = null, width = 0, day = false, version = 0;
  let drawn = ""; // what the rows in the page show: unchanged, they stay (a click between
  // mousedown and mouseup must land on the row it started on)
  const remote = () => paged && live;
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
  // when its width or the sorted column (its title then holds the arrow) changes.
  function size() {
    if (!root.isConnected || !table.clientWidth) return;
    const style = getComputedStyle(root);
    const type = `${style.fontSize} ${style.fontFamily}`; // a theme or a late font changes it
    const sorted = (model.get("sort") || "").split(":")[0];
    if (!nat || nat.type !== type) nat = { ...natural(type, store.cols, store.n), type };
    if (!want || want.type !== type || want.sorted !== sorted) {
      const { type: _t, ...columns } = nat;
      want = { ...widths(columns, sorted), type, sorted };
      width = 0;
    }
    if (table.clientWidth === width) return;
    width = table.clientWidth;
    const was = day;
    day = dayOnly(want, width);
    root.style.setProperty("--decoy-grid-columns", template(want, width, day));
    if (day !== was) {
      drawn = ""; // the rows on show say the day, or the minute
      paint();
    }
  }
  const resized = new ResizeObserver(() => size());
  resized.observe(table);
  document.fonts.ready.then(() => size());

  function filters() {
    return {
      topic: model.get("topic") || "",
      category: model.get("category") || "",
      mine: !!model.get("mine"),
      search: (model.get("search") || "").trim().toLowerCase(),
      sort: model.get("sort") || "",
    };
  }

  function load() {
    const paging = model.get("paging") || {};
    paged = !!paging.total;
    store = Store();
    store.hold(model.get("rows") || {});
    total = paged ? paging.total : store.n;
    keys = remote() ? [] : Array.from({ length: store.n }, (_, i) => searchKey(store.cols, i));
    nat = want = null;
    width = 0;
    query = "";
    pending = null;
    if (remote()) {
      // the rows as loaded, unfiltered: the state brought their first page and their count
      const f = filters();
      if (!f.topic && !f.category && !f.mine && !f.search && !f.sort) {
        query = JSON.stringify(f);
        order = new Int32Array(total).fill(-1);
        for (let i = 0; i < store.n; i++) order[i] = i;
        shown = total;
        space = paging.space || 0;
      }
    }
    refilter();
  }

  function refilter() {
    const f = filters();
    const [col, way] = f.sort.split(":");
    for (const [key] of COLUMNS) {
      const sorted = key === col;
      heads[key].dataset.sort = sorted ? way : "";
      if (sorted) heads[key].setAttribute("aria-sort", way === "desc" ? "descending" : "ascending");
      else heads[key].removeAttribute("aria-sort");
    }
    if (remote()) {
      const q = JSON.stringify(f);
      if (q === query) pending = null; // back to what is on show
      else if (complete() && narrows(JSON.parse(query), f)) {
        // every row the new filters can keep is here: filter them here, the kernel is not asked
        pending = null;
        query = q;
        order = pickRows(f, col, way, Array.from(order));
        shown = order.length;
        space = order.reduce((s, i) => s + (store.cols.source[i] === "space" ? 1 : 0), 0);
        activeP = -1;
      } else if (q !== pending) {
        pending = q;
        ask(q, f, 0, rowsInView() + MARGIN);
      }
    } else {
      order = pickRows(f, col, way);
      shown = order.length;
      space = order.reduce((s, i) => s + (store.cols.source[i] === "space" ? 1 : 0), 0);
    }
    counted();
  }

  // Whether the rows on show are all the rows their filters keep (none still at the kernel).
  const complete = () => pending === null && query !== "" && shown === order.length && order.indexOf(-1) < 0;
  // Whether filters `f` keep only rows that filters `was` keep: the same or more of them, the
  // search a longer text holding the earlier one (as typing makes it); the sort may change.
  function narrows(was, f) {
    return (!was.topic || was.topic === f.topic) && (!was.category || was.category === f.category) &&
      (!was.mine || f.mine) && f.search.includes(was.search);
  }
  const keyOf = (i) => keys[i] ?? (keys[i] = searchKey(store.cols, i));
  // A row's place as loaded: equal sort keys keep it (a paged table's rows carry it in `at`).
  const loadedAt = (i) => (store.cols.at ? store.cols.at[i] : i);

  // The local rule, over the rows the page holds (or those of them in `among`).
  function pickRows(f, col, way, among) {
    const rows = store.cols, out = [];
    const n = among ? among.length : store.n;
    for (let j = 0; j < n; j++) {
      const i = among ? among[j] : j;
      if (f.topic && rows.node[i] !== f.topic) continue;
      if (f.category && !rows.categories[i].includes(f.category)) continue;
      if (f.mine && !rows.mine[i]) continue;
      if (f.search && !keyOf(i).includes(f.search)) continue;
      out.push(i);
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
        return ka < kb ? -dir : ka > kb ? dir : loadedAt(a) - loadedAt(b);
      });
    } else if (among) out.sort((a, b) => loadedAt(a) - loadedAt(b));
    return out;
  }

  const rowsInView = () => Math.ceil((body.clientHeight || 360) / ROW) + 10;

  function ask(q, f, from, to) {
    const n = ++seq;
    const picked = model.get("picked") || "";
    asked.set(n, { query: q, from, to, picked });
    model.send({ kind: "window", seq: n, query: f, from, to, picked });
    clearTimeout(waited);
    waited = setTimeout(() => {
      slow = true;
      counted();
    }, PATIENCE);
  }

  function answered(msg) {
    const was = asked.get(msg.seq);
    if (!was) return;
    for (const k of asked.keys()) if (k <= msg.seq) asked.delete(k);
    if (!asked.size) {
      clearTimeout(waited);
      slow = false;
    }
    if (was.query === pending) {
      query = pending;
      pending = null;
      order = new Int32Array(msg.shown).fill(-1);
      shown = msg.shown;
      space = msg.space;
      drawn = "";
      activeP = -1;
    } else if (was.query !== query) return; // an answer to filters since changed
    const at = store.hold(msg.rows || {});
    for (let j = 0; j < at.length; j++) order[msg.from + j] = at[j];
    pickedAt = { id: was.picked, at: msg.picked_at };
    if (!active && activeP >= 0 && order[activeP] >= 0) active = store.cols.id[order[activeP]];
    version++;
    counted();
  }

  // The count line, the scroll height and the empty note from what is known now.
  function counted() {
    const f = filters();
    const known = pending === null && shown !== null;
    if (remote()) {
      // only a paged table waits for rows (setting these anyway would restyle the page each time)
      table.setAttribute("aria-busy", known ? "false" : "true");
      body.classList.toggle("decoy-grid-pending", !known);
    }
    if (!known) {
      count.textContent = `filtering ${plural(total, "memory", "memories")}…` + (slow ? " (waiting for the kernel)" : "");
      delete count.dataset.shown;
      table.setAttribute("aria-rowcount", "-1");
      paint();
      return;
    }
    table.setAttribute("aria-rowcount", shown + 1);
    count.dataset.shown = shown;
    if (paged && !live) {
      const all = plural(total, "memory", "memories");
      const held = store.n.toLocaleString("en");
      const any = f.topic || f.category || f.mine || f.search || f.sort;
      count.textContent = any
        ? `${shown.toLocaleString("en")} of the first ${held} of ${all} match (this saved page holds no more; filtering all of them needs the kernel)`
        : `${all}: this saved page holds the first ${held} as loaded; the others, and filtering and sorting all of them, need the kernel`;
    } else count.textContent = countText(shown, total, space);
    spacer.style.height = shown * ROW + "px";
    empty.style.display = shown ? "none" : "block";
    if (!total) empty.textContent = model.get("empty_reason") || "This vault holds no memory this connection can open.";
    else if (!shown) {
      const why = [];
      if (f.topic) why.push("in the picked topic");
      if (f.category) why.push(`of category ${f.category}`);
      if (f.mine) why.push("saved by this connection");
      if (f.search) why.push(`matching “${f.search}” in its text, topic or categories`);
      empty.textContent = `No memory ${why.join(", ")}: ${plural(total, "memory", "memories")} in all.`;
    }
    drawn = "";
    paint();
    showDetails();
  }

  function paint() {
    size();
    const first = Math.max(0, Math.floor(body.scrollTop / ROW) - 5);
    const last = Math.min(order.length, first + rowsInView());
    if (remote() && pending === null) fetch(first, last);
    win.style.top = first * ROW + "px";
    const picked = model.get("picked");
    const now = `${first}:${last}:${picked}:${active}:${activeP}:${version}:${order.length}:${day}`;
    if (now === drawn) return;
    drawn = now;
    const rows = store.cols;
    const frag = document.createDocumentFragment();
    let current = "";
    for (let p = first; p < last; p++) {
      const i = order[p];
      const tr = h("div", "decoy-grid-row", frag);
      tr.setAttribute("role", "row");
      tr.setAttribute("aria-rowindex", p + 2);
      tr.id = `${gid}-row-${p}`;
      tr.dataset.pos = p;
      const on = i >= 0 && active ? rows.id[i] === active : p === activeP;
      tr.setAttribute("aria-selected", on ? "true" : "false");
      if (on) {
        tr.classList.add("active");
        current = tr.id;
      }
      if (i < 0) {
        // not here yet: the kernel is sending it
        tr.classList.add("decoy-grid-coming");
        tr.setAttribute("aria-busy", "true");
        for (const [key] of COLUMNS) {
          const td = h("div", "decoy-grid-td col-" + key, tr);
          td.setAttribute("role", "gridcell");
          td.textContent = key === "text" ? "…" : "";
        }
        continue;
      }
      tr.dataset.id = rows.id[i];
      if (rows.id[i] === picked) tr.classList.add("picked");
      for (const [key] of COLUMNS) {
        const td = h("div", "decoy-grid-td col-" + key, tr);
        td.setAttribute("role", "gridcell");
        const text = cell(key, rows, i);
        const said = key === "updated" && day ? text.slice(0, DAY) : text;
        td.textContent = said.length > CLAMP ? said.slice(0, CLAMP) + "…" : said;
        if (key !== "mine") td.title = text.slice(0, 1000);
      }
    }
    win.replaceChildren(frag);
    if (current) table.setAttribute("aria-activedescendant", current);
    else table.removeAttribute("aria-activedescendant");
  }

  // Ask for the rows of positions first..last not here yet (with a margin), unless asked already.
  function fetch(first, last) {
    let gap = -1;
    for (let p = first; p < last; p++) if (order[p] < 0) { gap = p; break; }
    if (gap < 0) return;
    for (const a of asked.values()) if (a.query === query && a.from <= gap && a.to >= last) return;
    ask(query, filters(), Math.max(0, first - MARGIN), last + MARGIN);
  }

  function showDetails() {
    const id = model.get("picked");
    const i = id ? store.byId.get(id) ?? -1 : -1;
    const sent = model.get("picked_row") || {};
    const value = i >= 0 ? (col) => store.cols[col][i] : sent.id === id && id ? (col) => sent[col] : null;
    details.replaceChildren();
    if (!value) {
      h("div", "decoy-grid-hint", details).textContent = total
        ? "Click a row (or move to it with ↑/↓ and press Enter) to see the whole memory."
        : "";
      return;
    }
    const text = h("div", "decoy-grid-text", details);
    text.textContent = value("text");
    const fields = h("table", "decoy-grid-fields", details);
    for (const [key, title] of DETAILS) {
      const tr = h("tr", "", fields);
      h("th", "", tr).textContent = title;
      h("td", "", tr).textContent = show(key, value(key));
    }
    // a paged table knows it from the kernel's answer (the row may be among those not sent)
    const away = remote() ? pending === null && pickedAt.id === id && pickedAt.at < 0 : order.indexOf(i) < 0;
    if (away) h("div", "decoy-grid-hint", details).textContent = "(not among the rows the filters show)";
  }

  function pick(id) {
    model.set("picked", id); // its change event shows the details
    model.save_changes();
    const i = store.byId.get(id);
    const node = i === undefined ? "" : store.cols.node[i];
    // The map rings the row's topic in the frame after the one that paints the details:
    // redrawing a map of thousands of topics would otherwise hold the details back.
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        if (model.get("picked") !== id || model.get("picked_topic") === node) return;
        model.set("picked_topic", node);
        model.save_changes();
      }),
    );
  }
  // Make position `p` the active row, scrolled into view.
  function activate(p) {
    if (!order.length) return;
    p = Math.max(0, Math.min(order.length - 1, p));
    activeP = p;
    active = order[p] >= 0 ? store.cols.id[order[p]] : "";
    const top = p * ROW;
    if (top < body.scrollTop) body.scrollTop = top;
    else if (top + ROW > body.scrollTop + body.clientHeight) body.scrollTop = top + ROW - body.clientHeight;
    paint();
  }
  const activeAt = () => (active ? order.indexOf(store.byId.get(active) ?? -2) : activeP);
  win.addEventListener("click", (ev) => {
    const tr = ev.target.closest(".decoy-grid-row");
    if (!tr || !tr.dataset.id) return;
    active = tr.dataset.id;
    activeP = +tr.dataset.pos;
    pick(tr.dataset.id);
    table.focus({ preventScroll: true });
  });
  // Tabbing in makes a row active; a click does it itself (repainting under the pointer
  // between mousedown and mouseup would lose the click).
  table.addEventListener("focus", (ev) => {
    if (ev.target !== table || !table.matches(":focus-visible")) return;
    if ((active && activeAt() >= 0) || !order.length) return;
    const at = order.indexOf(store.byId.get(model.get("picked")) ?? -2);
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
      if (active) pick(active);
    }
  });
  body.addEventListener("scroll", perFrame(paint));
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
    drawn = "";
    paint();
    showDetails();
  };
  const onMessage = (msg) => msg && msg.kind === "window" && answered(msg);
  const unlisten = listen(model, {
    "change:topic": onFilter,
    "change:category": onFilter,
    "change:mine": onFilter,
    "change:sort": onFilter,
    "change:empty_reason": onFilter,
    "change:search": onFilter,
    "change:rows": load,
    "change:paging": load,
    "change:picked": onPicked,
    "change:picked_row": showDetails,
    "msg:custom": onMessage,
  });
  load();
  // The first paint may come before the table is in the page: size it once it is. Once that
  // frame is drawn, a paged table tells the kernel, which then builds what a search or a sort
  // over every row needs (not before: the first paint does not need it).
  let frames = 0;
  const painted = () => remote() && model.send({ kind: "shown" });
  const settle = () => {
    if (!root.isConnected) return ++frames < 600 && requestAnimationFrame(settle);
    paint();
    requestAnimationFrame(() => setTimeout(painted, 0));
  };
  requestAnimationFrame(settle);
  return () => {
    resized.disconnect();
    clearTimeout(waited);
    unlisten();
  };
}

export default { render };
