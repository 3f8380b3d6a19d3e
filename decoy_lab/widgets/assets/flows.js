// The flows view (decoy_lab/widgets/flows.py): every exchange as one row of an ARIA grid,
// filtered, sorted and virtually scrolled here, so a keystroke never waits for the kernel.
// The table's cells arrive once (trait `rows`, one list per column); new and changed flows
// arrive as messages {kind: "more", seq, rows, drop, dropped} (the `drop` oldest rows then let
// go) and a page that missed one asks for all rows again. The rule that picks the rows is
// written again in flows.py (FlowsView.shown_ids). An exchange in flight counts its time up.
// A click opens the flow: its request and answer as JSON trees with each sealed row opened and
// blobs in hex, drawn at once from the openings the page asked for ({kind: "want"}) of the rows
// in view, else from `details` sent ahead, else when the kernel's `detail` comes.
const ROW = 26;
const COLUMNS = [
  ["id", "#", "6%"], ["method", "method", "8%"], ["path", "path", "38%"], ["status", "status", "9%"],
  ["agent", "agent", "16%"], ["verdict", "verdict", "14%"], ["ms", "ms", "9%"],
];
const NUMERIC = { id: "id", status: "code", ms: "ms" };
const KEYS = ["id", "method", "path", "status", "code", "agent", "verdict", "ms", "tone", "t0"];
const KEPT_OPENINGS = 400; // openings kept on the page, the most recently asked for
const WANT_DELAY = 60; // ms after a repaint before the openings of the rows in view are asked for
const MARK = { true: "✓", false: "✗", null: "…" };
const followers = new WeakMap(); // model → views to tell when rows change

function countText(shown, total, dropped) {
  const all = plural(total, "exchange");
  const line = shown === total ? all : `${shown.toLocaleString("en")} of ${all}`;
  return dropped ? `${line} · ${dropped.toLocaleString("en")} older dropped` : line;
}
function msText(v, t0) {
  if (v >= 0) return v.toFixed(1);
  return t0 > 0 ? `${Math.max(0, Date.now() - t0).toLocaleString("en")}…` : "";
}
function hay(rows, i) {
  return `${rows.path[i]} ${rows.status[i]} ${rows.agent[i]} ${rows.verdict[i]}`.toLowerCase();
}

// Rows kept per model: the page's own copy, with its sequence number and a filter index.
function table(model) {
  let t = followers.get(model);
  if (!t) {
    t = { views: new Set(), rows: null, lower: [], opened: new Map() };
    followers.set(model, t);
    // The model's own `rows` object, added to in place: the widget state JupyterLab saves with the
    // notebook (and an export embeds) then holds every flow the page was sent.
    const load = (rows) => {
      t.rows = rows;
      rows.seq = rows.seq || 0;
      rows.dropped = rows.dropped || 0;
      t.opened.clear();
      for (const k of KEYS) rows[k] = rows[k] || [];
      t.at = new Map(t.rows.id.map((id, i) => [id, i]));
      t.lower = t.rows.id.map((_, i) => hay(t.rows, i));
    };
    t.load = load;
    load(model.get("rows") || {});
    const tell = () => t.views.forEach((f) => f());
    model.on("msg:custom", (msg) => {
      if (msg.kind === "all") return model.set("rows", msg.rows); // its change event loads it (page-side only)
      if (msg.kind === "more") {
        if (msg.seq <= t.rows.seq) return;
        if (msg.seq !== t.rows.seq + 1) return model.send({ kind: "resync" });
        const r = msg.rows;
        for (let j = 0; j < r.id.length; j++) {
          let i = t.at.get(r.id[j]);
          if (i === undefined) {
            i = t.rows.id.length;
            t.at.set(r.id[j], i);
          }
          for (const k of KEYS) t.rows[k][i] = r[k][j];
          t.lower[i] = hay(t.rows, i);
          t.opened.delete(r.id[j]); // it changed: its opening is asked for again
        }
        if (msg.drop > 0) {
          for (const id of t.rows.id.slice(0, msg.drop)) t.opened.delete(id);
          for (const k of KEYS) t.rows[k].splice(0, msg.drop);
          t.lower.splice(0, msg.drop);
          t.at = new Map(t.rows.id.map((id, i) => [id, i]));
        }
        t.rows.dropped = msg.dropped || 0;
        t.rows.seq = msg.seq;
      } else if (msg.kind === "opened") {
        for (const [id, d] of Object.entries(msg.details || {})) {
          t.opened.delete(Number(id));
          t.opened.set(Number(id), d);
        }
        while (t.opened.size > KEPT_OPENINGS) t.opened.delete(t.opened.keys().next().value);
        t.asked = null;
        t.views.forEach((f) => f.opened && f.opened());
        return;
      } else return;
      tell();
    });
    model.on("change:seq", () => {
      if ((model.get("seq") || 0) > t.rows.seq) model.send({ kind: "resync" });
    });
    model.on("change:rows", () => {
      load(model.get("rows") || {});
      tell();
    });
  }
  return t;
}

function render({ model, el }) {
  const t = table(model);
  const root = h("div", "decoy-flows", el);
  const bar = h("div", "decoy-flows-bar", root);
  const search = h("input", "decoy-flows-search", bar);
  search.type = "search";
  search.placeholder = "filter: path, status, agent, verdict";
  search.setAttribute("aria-label", "filter the exchanges by path, status, agent and verdict");
  const count = h("span", "decoy-flows-count", bar);
  count.setAttribute("role", "status");
  count.setAttribute("aria-live", "polite");
  const grid = h("div", "decoy-flows-grid", root);
  grid.setAttribute("role", "grid");
  grid.setAttribute("aria-label", "exchanges");
  grid.setAttribute("aria-colcount", COLUMNS.length);
  const headGroup = h("div", "decoy-flows-head", grid);
  headGroup.setAttribute("role", "rowgroup");
  const head = h("div", "decoy-flows-tr", headGroup);
  head.setAttribute("role", "row");
  head.setAttribute("aria-rowindex", "1");
  const body = h("div", "decoy-flows-body", grid);
  body.setAttribute("role", "rowgroup");
  body.tabIndex = 0;
  const spacer = h("div", "decoy-flows-spacer", body);
  const win = h("div", "decoy-flows-rows", spacer);
  const empty = h("div", "decoy-flows-empty", root);
  const details = h("div", "decoy-flows-detail", root);

  let order = [];
  let live = false; // an exchange in flight is in view: its time is counted up
  let wantTimer = null;
  let drawn = null; // the opening on show
  const heads = {};
  COLUMNS.forEach(([key, title, width], c) => {
    const th = h("div", "decoy-flows-th", head);
    th.setAttribute("role", "columnheader");
    th.setAttribute("aria-colindex", c + 1);
    th.style.width = width;
    const b = h("button", "decoy-flows-sort", th, title);
    b.type = "button";
    b.title = "sort by " + title;
    b.onclick = () => {
      const [col, way] = (model.get("sort") || "").split(":");
      model.set("sort", col !== key ? key + ":asc" : way === "asc" ? key + ":desc" : "");
      model.save_changes();
    };
    heads[key] = th;
  });

  function refilter() {
    const rows = t.rows, n = rows.id.length;
    const terms = (model.get("search") || "").toLowerCase().split(/\s+/).filter(Boolean);
    const out = [];
    for (let i = 0; i < n; i++) {
      const s = t.lower[i];
      if (terms.every((w) => s.includes(w))) out.push(i);
    }
    const [col, way] = (model.get("sort") || "").split(":");
    for (const [key] of COLUMNS) {
      heads[key].setAttribute("aria-sort", key !== col ? "none" : way === "desc" ? "descending" : "ascending");
    }
    const src = rows[NUMERIC[col] || col];
    if (src && COLUMNS.some(([k]) => k === col)) {
      const num = !!NUMERIC[col];
      const key = new Map(out.map((i) => [i, num ? src[i] : String(src[i]).toLowerCase()]));
      const dir = way === "desc" ? -1 : 1;
      out.sort((a, b) => {
        const ka = key.get(a), kb = key.get(b);
        return ka < kb ? -dir : ka > kb ? dir : a - b;
      });
    }
    order = out;
    count.textContent = countText(order.length, n, rows.dropped);
    count.dataset.shown = order.length;
    count.dataset.total = n;
    grid.setAttribute("aria-rowcount", order.length + 1);
    spacer.style.height = order.length * ROW + "px";
    empty.style.display = order.length ? "none" : "block";
    empty.textContent = n
      ? `No exchange matches “${model.get("search")}”: ${countText(n, n, 0)} in all.`
      : "No exchange yet: point the agent at the inspector's URL.";
    paint();
  }

  function paint() {
    const rows = t.rows;
    const first = Math.max(0, Math.floor(body.scrollTop / ROW) - 5);
    const last = Math.min(order.length, first + Math.ceil((body.clientHeight || 364) / ROW) + 10);
    win.style.top = first * ROW + "px";
    const picked = model.get("picked");
    const frag = document.createDocumentFragment();
    live = false;
    for (let p = first; p < last; p++) {
      const i = order[p];
      const tr = h("div", "decoy-flows-tr decoy-flows-row", frag);
      tr.setAttribute("role", "row");
      tr.setAttribute("aria-rowindex", p + 2);
      tr.dataset.id = rows.id[i];
      if (rows.tone[i]) tr.classList.add("tone-" + rows.tone[i]);
      if (rows.id[i] === picked) {
        tr.classList.add("picked");
        tr.setAttribute("aria-selected", "true");
      }
      COLUMNS.forEach(([key, , width], c) => {
        const td = h("div", "decoy-flows-td col-" + key, tr);
        td.setAttribute("role", c === 0 ? "rowheader" : "gridcell");
        td.setAttribute("aria-colindex", c + 1);
        td.style.width = width;
        const v = rows[key][i];
        td.textContent = key === "ms" ? msText(v, rows.t0[i]) : String(v ?? "");
      });
      if (rows.t0[i] > 0) {
        live = true;
        tr.classList.add("in-flight");
      }
    }
    win.replaceChildren(frag);
    clearTimeout(wantTimer);
    wantTimer = setTimeout(() => want(first, last), WANT_DELAY);
  }

  // The openings of the rows in view, asked for once the view rests, so a click shows one at once.
  function want(first, last) {
    const rows = t.rows, ids = [];
    for (let p = first; p < last && p < order.length; p++) {
      const id = rows.id[order[p]];
      if (!(rows.t0[order[p]] > 0) && !t.opened.has(id)) ids.push(id);
    }
    const key = ids.join(",");
    if (!ids.length || t.asked === key) return;
    t.asked = key;
    model.send({ kind: "want", ids });
  }

  function showDetail() {
    const id = model.get("picked");
    if (id == null || id < 0) {
      drawn = null;
      details.replaceChildren();
      h("div", "decoy-flows-hint", details, t.rows.id.length ? "Click an exchange to open its request and answer." : "");
      return;
    }
    const kept = t.opened.get(id);
    const sent = model.get("detail") || {};
    const d = sent.id === id ? sent : kept || (model.get("details") || {})[String(id)] || sent;
    // already on show (drawn from what the page kept, before the kernel's same opening came)
    if (drawn && d.id === id && drawn.id === id && (drawn === d || JSON.stringify(drawn) === JSON.stringify(d))) return;
    drawn = d;
    details.replaceChildren();
    if (d.id !== id) {
      drawn = null;
      const i = t.at.get(id);
      const title = i === undefined ? `#${id}` : `#${id} ${t.rows.method[i]} ${t.rows.path[i]}`;
      h("div", "decoy-flows-title", details, title);
      h("div", "decoy-flows-hint", details, "opening… (the kernel opens the flow; an exported page holds only the flows sent ahead)");
      return;
    }
    drawDetail(details, d, model);
  }

  function pick(id) {
    model.set("picked", id);
    model.save_changes();
  }
  win.addEventListener("click", (ev) => {
    const tr = ev.target.closest(".decoy-flows-row");
    if (tr) pick(Number(tr.dataset.id));
  });
  body.addEventListener("keydown", (ev) => {
    if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
    ev.preventDefault();
    if (!order.length) return;
    const at = order.indexOf(t.at.get(model.get("picked")));
    const next = Math.max(0, Math.min(order.length - 1, at + (ev.key === "ArrowDown" ? 1 : -1)));
    pick(t.rows.id[order[next]]);
    const top = next * ROW;
    if (top < body.scrollTop) body.scrollTop = top;
    else if (top + ROW > body.scrollTop + body.clientHeight) body.scrollTop = top + ROW - body.clientHeight;
  });
  body.addEventListener("scroll", perFrame(paint));
  search.value = model.get("search") || "";
  search.addEventListener("input", () => {
    model.set("search", search.value); // filters at once here; the kernel hears of it after
    model.save_changes();
  });
  const onFilter = () => {
    if (search.value !== (model.get("search") || "")) search.value = model.get("search") || "";
    body.scrollTop = 0;
    refilter();
  };
  const onPicked = () => {
    paint();
    showDetail();
  };
  const onRows = () => {
    refilter();
    if (model.get("picked") >= 0 && !details.querySelector(".decoy-flows-facts")) showDetail();
  };
  onRows.opened = () => {
    if (model.get("picked") >= 0 && !details.querySelector(".decoy-flows-facts")) showDetail();
  };
  t.views.add(onRows);
  const ticker = setInterval(() => live && paint(), 500);
  const unlisten = listen(model, {
    "change:search": onFilter,
    "change:sort": onFilter,
    "change:picked": onPicked,
    "change:detail": showDetail,
    "change:details": showDetail,
  });
  refilter();
  showDetail();
  return () => {
    clearInterval(ticker);
    clearTimeout(wantTimer);
    t.views.delete(onRows);
    unlisten();
  };
}

// -- one flow opened ----------------------------------------------------------------------------
function drawDetail(box, d, model) {
  h("div", "decoy-flows-title", box, d.title);
  const facts = h("table", "decoy-flows-facts", box);
  for (const [k, v] of d.facts) {
    const tr = h("tr", "", facts);
    h("th", "", tr, k);
    h("td", "", tr, v);
  }
  for (const note of d.notes || []) h("div", "decoy-flows-note", box, note);
  if (d.rows.length) {
    const rows = h("section", "decoy-flows-rowcards", box);
    rows.setAttribute("aria-label", "sealed rows");
    h("div", "decoy-flows-h", rows, plural(d.rows.length, "sealed row"));
    d.rows.forEach((r) => rowCard(rows, r, d.id, model));
  }
  const sides = h("div", "decoy-flows-sides", box);
  side(sides, "request", d.request, d);
  side(sides, "answer", d.response, d);
}

function rowCard(parent, r, flowId, model) {
  const tone = r.verdict === "unreadable" ? "bad" : r.verdict === "readable" ? "ok" : r.verdict === "error" ? "error" : "layout";
  const card = h("div", "decoy-flows-rowcard tone-" + tone, parent);
  card.dataset.row = r.index;
  card.dataset.verdict = r.verdict;
  const top = h("div", "decoy-flows-rowtop", card);
  h("span", "decoy-flows-badge tone-" + tone, top, r.verdict);
  h("span", "decoy-flows-rowid", top, `${r.field} · ${r.kind || "row"} ${r.id}`);
  if (r.opened_by) h("span", "decoy-flows-by", top, `opened with the ${r.opened_by}`);
  if (r.recipe && model.get("recipe_view")) {
    const b = h("button", "decoy-flows-recipe", top, "recipe view");
    b.type = "button";
    b.title = "step through this row's recipe (below the table)";
    b.onclick = () => {
      model.set("recipe", `${flowId}:${r.index}`);
      model.save_changes();
    };
  }
  if (r.reason) {
    const why = h("div", "decoy-flows-reason", card, r.reason);
    if (r.problem) why.dataset.problem = r.problem;
  }
  if (r.certainty) h("div", "decoy-flows-certainty", card, `layout: ${r.certainty}`);
  if (r.text != null) h("div", "decoy-flows-text", card, r.text);
  if (r.plaintext) {
    const det = h("details", "decoy-flows-plain", card);
    h("summary", "", det, "plaintext");
    h("pre", "", det, r.plaintext);
  }
  if (r.recipe) {
    // a row that opened keeps its recipe folded; one that did not shows where it stops
    const fold = h("details", "decoy-flows-recipe-steps", card);
    fold.open = r.recipe.failed >= 0;
    h("summary", "", fold, r.recipe.headline);
    const steps = h("ol", "decoy-flows-steps", fold);
    steps.setAttribute("aria-label", r.recipe.headline);
    r.recipe.steps.forEach((s, i) => {
      const li = h("li", s.ok === false ? "failed" : "", steps, `${MARK[s.ok]} ${s.name}`);
      if (i === r.recipe.failed && s.reason) h("div", "decoy-flows-why", li, s.reason);
    });
  }
}

function side(parent, title, s, d) {
  const box = h("section", "decoy-flows-side", parent);
  box.setAttribute("aria-label", title);
  const more = s.truncated ? ", cut at the record's cap" : s.complete ? "" : ", incomplete";
  h("div", "decoy-flows-h", box, `${title} · ${s.size.toLocaleString("en")} bytes${more}`);
  const hd = h("details", "decoy-flows-headers", box);
  h("summary", "", hd, plural(s.headers.length, "header"));
  const ht = h("table", "", hd);
  for (const [k, v] of s.headers) {
    const tr = h("tr", "", ht);
    h("th", "", tr, k);
    h("td", "", tr, v);
  }
  if (s.tree) {
    const tree = h("div", "decoy-flows-tree", box);
    tree.setAttribute("role", "tree");
    tree.setAttribute("aria-label", title + " body");
    node(tree, s.tree, 0, d);
  } else if (s.text) h("pre", "decoy-flows-raw", box, s.text);
  else h("div", "decoy-flows-hint", box, "no body");
}

function node(parent, n, depth, d) {
  const label = (el) => {
    h("span", "decoy-flows-key", el, typeof n.k === "number" ? `[${n.k}]` : n.k);
    if (n.row != null) {
      const r = d.rows[n.row];
      const b = h("span", "decoy-flows-badge tone-" + (r.verdict === "unreadable" ? "bad" : r.verdict === "readable" ? "ok" : "layout"), el, r.verdict);
      b.title = r.reason || r.certainty || "";
    }
  };
  if (n.c) {
    const det = h("details", "decoy-flows-node", parent);
    det.setAttribute("role", "treeitem");
    det.open = depth < 2 || n.row != null;
    const sum = h("summary", "", det);
    label(sum);
    h("span", "decoy-flows-type", sum, n.t === "array" ? ` [${n.n}]` : ` {${n.n}}`);
    const kids = h("div", "decoy-flows-kids", det);
    kids.setAttribute("role", "group");
    for (const c of n.c) node(kids, c, depth + 1, d);
    if (n.n > n.c.length) h("div", "decoy-flows-hint", kids, `… ${n.n - n.c.length} more not drawn`);
    return;
  }
  const leaf = h(n.blob != null ? "details" : "div", "decoy-flows-leaf", parent);
  leaf.setAttribute("role", "treeitem");
  const line = n.blob != null ? h("summary", "", leaf) : leaf;
  label(line);
  h("span", "decoy-flows-val t-" + n.t, line, n.t === "str" ? JSON.stringify(n.v) : String(n.v));
  if (n.blob != null) {
    const b = d.blobs[n.blob];
    h("span", "decoy-flows-kind", line, ` ${b.kind}, ${b.size.toLocaleString("en")} bytes`);
    h("div", "decoy-flows-certainty", leaf, b.certainty);
    const hex = h("div", "decoy-flows-hex", leaf);
    // drawn when first opened: a flow of many rows opens at once, its dumps as they are looked at
    leaf.addEventListener("toggle", () => {
      if (leaf.open && !hex.firstChild) hex.innerHTML = b.html; // hexdump.dump_html: every text escaped there
    });
  }
}

export default { render };
