// The recipe view of a decoy_lab Trace: every step in one column with its ✓/✗, the open step's
// bytes as a virtualised hex view linked both ways with a nested field tree, the bytes that
// differ from the served blob marked, in-place edits sent to the kernel to re-run the recipe.
// Everything it draws comes from the `recipe` trait (decoy_lab.recipes.trace.view); stepping, clicking
// and highlighting happen here, with no round trip to the kernel.

const ROW = 18; // px per hex row
const WIDTH = 16; // bytes per row
const VISIBLE = 16; // rows the hex view shows before it scrolls
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

function esc(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function fromHex(hex) {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(2 * i, 2), 16);
  return out;
}

// The flat list of tree nodes (depth first), each with its depth and colour (leaves only).
function flatten(tree) {
  const nodes = [];
  let leaf = 0;
  (function walk(node, depth, parent) {
    const me = { ...node, depth, parent, index: nodes.length, colour: -1 };
    nodes.push(me);
    if (!node.children.length && depth > 0) me.colour = leaf++;
    for (const kid of node.children) walk(kid, depth + 1, me.index);
  })(tree, 0, -1);
  return nodes;
}

// The bytes a step shows on one side: what it read ("in") or what it gave out ("out").
function side(step, which) {
  if (which === "out") return { blob: step.out, tree: step.out_tree, changed: [], masked: [] };
  return { blob: step.blob, tree: step.tree, changed: step.changed, masked: step.masked };
}

// What one open step needs to draw its bytes: the bytes, the colour and mark of each byte.
function prepare(recipe, step, cache) {
  if (step.blob == null) return null;
  let data = cache.get(step.blob);
  if (!data) cache.set(step.blob, (data = fromHex(recipe.blobs[step.blob])));
  const n = data.length;
  const nodes = flatten(step.tree);
  const colour = new Int16Array(n).fill(-1);
  const edge = new Uint8Array(n);
  for (const node of nodes) {
    if (node.colour < 0) continue;
    for (let i = node.start; i < node.end && i < n; i++) colour[i] = node.colour;
    if (node.start > 0 && node.start < n) edge[node.start] = 1;
  }
  const changed = new Uint8Array(n);
  let changedCount = 0;
  for (const [a, b] of step.changed) {
    changed.fill(1, a, Math.min(b, n));
    changedCount += Math.max(0, Math.min(b, n) - a);
  }
  const masked = new Uint8Array(n);
  for (const m of step.masked) masked.fill(1, m.start, Math.min(m.end, n));
  return { data, n, nodes, colour, edge, changed, changedCount, masked, rows: Math.ceil(n / WIDTH) };
}

function deepest(nodes, offset) {
  let best = null;
  for (const node of nodes) {
    if (node.start <= offset && offset < node.end && (!best || node.depth > best.depth)) best = node;
  }
  return best;
}

function render({ model, el }) {
  const root = h("div", { class: "decoy-stepper decoy-recipe", tabindex: "0", "data-lm-suppress-shortcuts": "true" });
  el.append(root);
  const cache = new Map(); // blob index -> its bytes
  const prepared = new Map(); // "step:side" -> what drawing it needs (stepping back costs nothing)
  let recipe = model.get("recipe");
  let index = model.get("index");
  let open = null; // the prepared bytes of the open step
  let lit = null; // [start, end) of the selected node
  let selNode = -1;
  let selByte = -1;
  let edit = null; // {start, end}
  let which = "in"; // the open step's bytes on show: its input, or its output
  let hexView = null;
  let treeView = null;

  const head = h("div", "dr-head", root);
  const bar = h("div", "dr-bar", root);
  const prev = h("button", { class: "dr-btn", onclick: () => go(index - 1) }, bar, "◀ Prev");
  const next = h("button", { class: "dr-btn", onclick: () => go(index + 1) }, bar, "Next ▶");
  const where = h("span", "dr-where", bar);
  h("span", "dr-fill", bar);
  h("button", { class: "dr-btn", onclick: () => ask("json") }, bar, "Export JSON");
  h("button", { class: "dr-btn", onclick: () => ask("python") }, bar, "Export Python");
  const notice = h("div", "dr-notice", root);
  const list = h("ol", "dr-steps", root);

  function ask(as) {
    model.send({ kind: "export", as });
  }

  function shownBytes(i, w) {
    const key = `${i}:${w}`;
    if (!prepared.has(key)) prepared.set(key, prepare(recipe, side(recipe.steps[i], w), cache));
    return prepared.get(key);
  }

  function drawHead() {
    head.innerHTML =
      `<b>${esc(recipe.title)}</b> <span class="dr-headline dr-tone" style="--dr-tone:${recipe.colour}">` +
      `${esc(recipe.headline.slice(recipe.title.length))}</span>` +
      (recipe.verdict ? `<div class="dr-verdict">${esc(recipe.verdict)}</div>` : "");
  }

  function drawList() {
    list.replaceChildren(
      ...recipe.steps.map((s, i) => {
        const li = h("li", { class: "dr-step", "data-step": String(i), "data-ok": String(s.ok) });
        const line = h("div", { class: "dr-step-head", onclick: () => go(i) }, li);
        h("span", { class: "dr-mark dr-tone", style: `--dr-tone:${s.colour}` }, line, s.mark);
        h("span", "dr-name", line, ` ${i + 1}. ${s.name}`);
        if (s.ok === false) h("span", "dr-brief", line, " — " + (s.lines[0] || ["", ""])[1]);
        return li;
      }),
    );
  }

  function drawAll() {
    drawHead();
    drawList();
    index = Math.max(0, Math.min(recipe.steps.length - 1, index));
    openStep(index);
  }

  function go(i) {
    const n = recipe.steps.length;
    if (!n) return;
    i = Math.max(0, Math.min(n - 1, i));
    if (i === index && list.querySelector(".dr-step.open")) return;
    openStep(i);
    model.set("index", i);
    model.save_changes();
  }

  function openStep(i) {
    const n = recipe.steps.length;
    prev.disabled = i <= 0;
    next.disabled = i >= n - 1;
    where.textContent = n ? `step ${i + 1} of ${n}` : "no steps";
    if (!n) {
      list.replaceChildren(h("li", "dr-empty", null, "This trace has no steps."));
      return;
    }
    const old = list.querySelector(".dr-step.open");
    if (old) {
      old.classList.remove("open");
      old.querySelector(".dr-body")?.remove();
    }
    const sameBytes = open && which === "in" && recipe.steps[index]?.blob === recipe.steps[i].blob;
    index = i;
    const step = recipe.steps[i];
    which = step.blob == null && step.out != null ? "out" : "in";
    open = shownBytes(i, which);
    if (!sameBytes) {
      lit = null;
      selByte = -1;
      edit = null;
    }
    selNode = lit && open ? (open.nodes.find((x) => x.start === lit[0] && x.end === lit[1])?.index ?? -1) : -1;
    const li = list.children[i];
    li.classList.add("open");
    li.append(body(step, i));
    if (lit && open) scrollTo(lit[0]);
  }

  function body(step, i) {
    const box = h("div", "decoy-step dr-body");
    h("div", "dr-title", box, `${step.mark} ${i + 1}. ${step.name}`);
    for (const [label, text] of step.lines) {
      const line = h("div", label === "reason" ? "dr-line dr-reason" : "dr-line", box);
      h("span", "dr-label", line, label === "reason" ? "Why it failed" : label);
      h("code", "", line, text);
    }
    const bytes = h("div", "dr-bytesbox");
    if (step.blob != null && step.out != null) {
      const tabs = h("div", "dr-tabs", box);
      const tab = (w, label) =>
        h(
          "button",
          {
            class: "dr-tab" + (which === w ? " on" : ""),
            onclick: (e) => {
              which = w;
              open = shownBytes(i, w);
              lit = null;
              selByte = selNode = -1;
              edit = null;
              box.querySelectorAll(".dr-tab").forEach((t) => t.classList.toggle("on", t === e.currentTarget));
              fillBytes(step, i, bytes);
            },
          },
          tabs,
          label,
        );
      tab("in", "input bytes");
      tab("out", "output bytes");
    }
    box.append(bytes);
    fillBytes(step, i, bytes);
    return box;
  }

  function fillBytes(step, i, box) {
    box.replaceChildren();
    if (!open) {
      hexView = treeView = null;
      return;
    }
    const changedCount = open.changedCount;
    const editable = step.input && which === "in";
    h(
      "div",
      "dr-summary",
      box,
      plural(open.n, "byte") +
        (which === "out" ? " given out by this step" : "") +
        (changedCount ? ` · ${plural(changedCount, "byte differs", "bytes differ")} from the served blob` : "") +
        (editable ? " · double-click a byte or a field to edit it" : ""),
    );
    hexView = h("div", { class: "dr-hex", style: `height:${Math.min(open.rows, VISIBLE) * ROW + 2}px` });
    const spacer = h("div", { class: "dr-spacer", style: `height:${open.rows * ROW}px` }, hexView);
    h("div", "dr-rows", spacer);
    hexView.addEventListener("scroll", perFrame(drawRows));
    hexView.addEventListener("click", (e) => {
      const o = e.target.dataset?.o;
      if (o != null) pickByte(+o);
    });
    hexView.addEventListener("dblclick", (e) => {
      const o = e.target.dataset?.o;
      if (o != null) startEdit(+o, +o + 1);
    });
    treeView = h("div", "dr-tree");
    treeView.append(tree());
    h("div", "dr-bytes", box).append(hexView, treeView);
    h("div", "dr-info", box);
    box.append(editor(step, i));
    requestAnimationFrame(drawRows);
    drawRows();
  }

  function tree() {
    const ul = h("ul", "dr-tree-root");
    const items = new Map();
    for (const node of open.nodes) {
      const li = h("li");
      const label = h(
        "span",
        {
          class: "dr-node" + (node.index === selNode ? " dr-node-sel" : ""),
          "data-n": String(node.index),
          title: node.note || "",
          onclick: () => pickNode(node.index),
          ondblclick: () => startEdit(node.start, node.end),
        },
        li,
      );
      if (node.colour >= 0) {
        h("span", { class: "dr-swatch", style: `background:${recipe.palette[node.colour % recipe.palette.length]}` }, label);
      }
      h("b", "", label, node.name);
      h("span", "dr-range", label, ` [${node.start}:${node.end}]`);
      if (node.note) h("span", "dr-note", label, " " + node.note);
      items.set(node.index, li);
      if (node.parent < 0) ul.append(li);
      else {
        const parent = items.get(node.parent);
        let sub = parent.querySelector(":scope > ul");
        if (!sub) sub = h("ul", "", parent);
        sub.append(li);
      }
    }
    return ul;
  }

  function drawRows() {
    if (!open || !hexView) return;
    const first = Math.max(0, Math.floor(hexView.scrollTop / ROW) - 2);
    const last = Math.min(open.rows, first + VISIBLE + 5);
    const { data, colour, edge, changed, masked, n } = open;
    const pal = recipe.palette;
    let out = "";
    for (let r = first; r < last; r++) {
      let hx = "";
      let asc = "";
      for (let o = r * WIDTH; o < Math.min(n, (r + 1) * WIDTH); o++) {
        let cls = "dr-b";
        if (changed[o]) cls += " dr-changed";
        if (lit && o >= lit[0] && o < lit[1]) cls += " dr-lit";
        if (o === selByte) cls += " dr-sel";
        if (edge[o]) cls += " dr-edge";
        const bg = colour[o] >= 0 ? ` style="background:${pal[colour[o] % pal.length]}"` : "";
        const b = data[o];
        const m = masked[o];
        hx += `<span class="${cls}" data-o="${o}"${bg}>${m ? "••" : HEX[b]}</span>`;
        const ch = m ? "•" : b >= 0x20 && b < 0x7f ? esc(String.fromCharCode(b)) : ".";
        asc += `<span class="${cls.replace("dr-b", "dr-a")}" data-o="${o}"${bg}>${ch}</span>`;
      }
      out +=
        `<div class="dr-row" style="top:${r * ROW}px"><span class="dr-off">` +
        `${(r * WIDTH).toString(16).padStart(6, "0")}</span><span class="dr-hexcol">${hx}</span>` +
        `<span class="dr-asc">${asc}</span></div>`;
    }
    hexView.querySelector(".dr-rows").innerHTML = out;
  }

  // Selection changes restyle the spans already drawn (no redraw: a double-click must land on the
  // very element its first click hit).
  function restyle() {
    if (!hexView) return;
    for (const el of hexView.querySelectorAll(".dr-rows [data-o]")) {
      const o = +el.dataset.o;
      el.classList.toggle("dr-lit", !!lit && o >= lit[0] && o < lit[1]);
      el.classList.toggle("dr-sel", o === selByte);
    }
  }

  function scrollTo(offset) {
    if (!hexView) return;
    const top = Math.floor(offset / WIDTH) * ROW;
    if (top < hexView.scrollTop || top >= hexView.scrollTop + VISIBLE * ROW) hexView.scrollTop = Math.max(0, top - ROW);
  }

  function markNode() {
    treeView?.querySelectorAll(".dr-node-sel").forEach((x) => x.classList.remove("dr-node-sel"));
    const sel = treeView?.querySelector(`.dr-node[data-n="${selNode}"]`);
    if (sel) {
      sel.classList.add("dr-node-sel");
      const t = treeView; // scroll the tree only, and only up or down
      if (sel.offsetTop < t.scrollTop || sel.offsetTop > t.scrollTop + t.clientHeight - 20) t.scrollTop = sel.offsetTop - 20;
    }
  }

  function pickNode(k) {
    const node = open.nodes[k];
    selNode = k;
    lit = [node.start, node.end];
    markNode();
    scrollTo(node.start);
    restyle();
    const n = node.end - node.start;
    info(`${node.name} [${node.start}:${node.end}] · ${plural(n, "byte")}` + (node.note ? ` · ${node.note}` : ""));
  }

  function pickByte(o) {
    selByte = o;
    const node = deepest(open.nodes, o);
    if (node) {
      selNode = node.index;
      lit = [node.start, node.end];
      markNode();
    }
    restyle();
    const blob = side(recipe.steps[index], which).blob;
    const users = recipe.steps.map((s, i) => [s, i]).filter(([s]) => s.blob === blob || s.out === blob);
    const box = root.querySelector(".dr-info");
    const value = open.masked[o] ? "••" : "0x" + HEX[open.data[o]];
    // The byte, then the steps that read it as a list: each its own line, its number and name
    // a link that opens it.
    box.replaceChildren();
    h(
      "div",
      "dr-info-byte",
      box,
      `byte ${o} (0x${o.toString(16)}) = ${value}` +
        (open.changed[o] ? " · changed from the served blob" : "") +
        (node ? ` · field ${node.name} [${node.start}:${node.end}]` : ""),
    );
    h("div", "dr-info-label", box, users.length === 1 ? "read in step:" : "read in steps:");
    const steps = h("ul", "dr-info-steps", box);
    for (const [s, i] of users) {
      const link = { class: "dr-steplink", href: "#", onclick: (e) => (e.preventDefault(), go(i)) };
      h("a", link, h("li", "", steps), `step ${i + 1}: ${s.name}` + (s.blob === blob ? "" : " (its output)"));
    }
  }

  function info(text) {
    const box = root.querySelector(".dr-info");
    if (box) box.textContent = text;
  }

  function editor(step, i) {
    const input = h("input", { class: "dr-edit-hex", type: "text", spellcheck: "false", placeholder: "hex" });
    const what = h("span", "dr-edit-what");
    const run = h("button", "dr-btn dr-rerun", null, `Re-run from step ${i + 1}`);
    const form = h("div", "dr-edit");
    form.append(what, input, run);
    const submit = () => {
      if (!edit) return;
      const hex = input.value.replace(/\s+/g, "");
      model.send({ kind: "edit", step: index, start: edit.start, end: edit.end, hex });
    };
    run.addEventListener("click", submit);
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") submit();
      e.stopPropagation();
    });
    if (which === "out") {
      form.classList.add("dr-edit-off");
      what.textContent = "What this step gave out: edit what it read (input bytes) to change it.";
      input.disabled = run.disabled = true;
    } else if (!step.input) {
      form.classList.add("dr-edit-off");
      what.textContent = recipe.editable
        ? "These bytes come from an earlier step: edit them in the step that reads the blob."
        : "This trace records no recipe to run again, so its bytes cannot be edited here.";
      input.disabled = run.disabled = true;
    } else {
      what.textContent = "Double-click a byte or a field, type its new hex, then re-run.";
      input.disabled = run.disabled = true;
    }
    return form;
  }

  function startEdit(start, end) {
    const step = recipe.steps[index];
    if (!step.input || !open || which !== "in") return;
    for (let o = start; o < end; o++) {
      if (open.masked[o]) return notify("Secret bytes are masked here; reveal them to edit.");
    }
    edit = { start, end };
    const form = root.querySelector(".dr-edit");
    const input = form.querySelector("input");
    form.querySelector(".dr-edit-what").textContent = `bytes [${start}:${end}] of ${step.input} =`;
    input.disabled = form.querySelector("button").disabled = false;
    let hex = "";
    for (let o = start; o < end; o++) hex += HEX[open.data[o]];
    input.value = hex;
    input.focus();
    input.select();
  }

  function notify(text) {
    notice.textContent = text;
    notice.style.display = text ? "block" : "none";
  }

  root.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "TEXTAREA") return;
    if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
      e.preventDefault();
      e.stopPropagation();
      go(index + (e.key === "ArrowLeft" ? -1 : 1));
    }
  });
  root.addEventListener("mousedown", (e) => {
    if (e.target.tagName !== "INPUT" && e.target.tagName !== "BUTTON") root.focus({ preventScroll: true });
  });

  const unlisten = listen(model, {
    "change:recipe": () => {
      recipe = model.get("recipe");
      cache.clear();
      prepared.clear();
      open = null;
      drawAll();
    },
    "change:index": () => {
      const i = model.get("index");
      if (i !== index || !list.querySelector(".dr-step.open")) openStep(i);
    },
    "change:error": () => notify(model.get("error")),
    "msg:custom": (msg) => {
      if (msg.kind !== "export") return;
      const url = URL.createObjectURL(new Blob([msg.text], { type: msg.type }));
      const a = h("a", { href: url, download: msg.name }, root);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
      notify(`Exported ${msg.name}.`);
    },
  });

  notify(model.get("error"));
  drawAll();
  return unlisten;
}

export default { render };
