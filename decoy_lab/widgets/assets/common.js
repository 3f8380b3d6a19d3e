// What every widget's script shares (decoy_lab/widgets/html.py `widget_script` puts this file in
// front of each one, as anywidget loads one script per widget): the element builder, a count
// and its noun, a once-a-frame throttle, and the model listeners a view drops when it goes.

// A new `tag` element. `cls` is its class, or an object of its attributes (`class`, `style`,
// `data-…`; an `on…` key adds a listener for that event); it holds `text` when given and is
// appended to `parent` when given.
function h(tag, cls, parent, text) {
  const e = document.createElement(tag);
  if (typeof cls === "string") {
    if (cls) e.className = cls;
  } else {
    for (const [k, v] of Object.entries(cls || {})) {
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
  }
  if (text != null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

// A count and its noun, thousands separated, as decoy_lab.text.plural writes it: "1 memory",
// "1,204 memories".
function plural(n, one, many) {
  return `${n.toLocaleString("en")} ${n === 1 ? one : many || one + "s"}`;
}

// `f` run on the next animation frame, once however often it is asked for before then (a
// scroll fires many events a frame; one repaint is enough).
function perFrame(f) {
  let asked = false;
  return () => {
    if (asked) return;
    asked = true;
    requestAnimationFrame(() => {
      asked = false;
      f();
    });
  };
}

// `handlers` ({event: handler}) listened to on `model`; what it returns stops listening, for
// the view's teardown.
function listen(model, handlers) {
  const pairs = Object.entries(handlers);
  for (const [event, f] of pairs) model.on(event, f);
  return () => {
    for (const [event, f] of pairs) model.off(event, f);
  };
}
