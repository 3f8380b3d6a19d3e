"""Text contrast measured on a rendered page (WCAG 2.x): every visible element under a root that
has text of its own, its colour against the first opaque background beneath it."""

from __future__ import annotations

AA = 4.5  # WCAG 2.x AA, normal text

_CONTRASTS = """(root) => {
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const under = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length === 3 || c[3] > 0) return c.slice(0, 3); } return [255, 255, 255]; };
  const out = [];
  for (const el of document.querySelector(root).querySelectorAll('*')) {
    const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent.trim()).join(' ');
    if (!own || !el.getClientRects().length || getComputedStyle(el).visibility === 'hidden') continue;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(under(el));
    out.push([own.slice(0, 40), (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)]);
  }
  return out;
}"""


def low_contrast(page, root: str = "body", least: float = AA) -> list[tuple[str, float]]:
    """(text, ratio) of every text under `root` whose contrast is below `least`."""
    return [(text, round(ratio, 2)) for text, ratio in page.evaluate(_CONTRASTS, root) if ratio < least]
