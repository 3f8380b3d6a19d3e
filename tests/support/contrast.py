"""WCAG 2.x text contrast measured on a rendered page, and JupyterLab's theme switch.

`offenders(page, selector)` looks at every visible text node under the elements `selector`
matches, takes its computed colour and its effective background (the first opaque background
up the tree, the translucent ones between composited over it) and returns each node whose
contrast ratio is under the WCAG AA minimum: 4.5:1, or 3:1 for large text (≥ 24px, or ≥ 18.66px
bold). WCAG 2.x 1.4.3: "text or images of text that are part of an inactive user interface
component … have no contrast requirement", so disabled controls are skipped.
"""

from __future__ import annotations

from typing import Any

LIGHT, DARK, HIGH_CONTRAST = "JupyterLab Light", "JupyterLab Dark", "JupyterLab Dark High Contrast"

# Colours go through a 1x1 canvas, so any syntax the page computes (rgb(), color(srgb …) from
# color-mix, oklab …) reads back as the same sRGB bytes the screen gets.
_MEASURE = """([selector, exclude]) => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const rgba = (css) => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = 'rgba(0,0,0,0)';
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const d = ctx.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2], d[3] / 255];
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const lum = (c) => {
    const ch = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
  };
  const hex = (c) => '#' + c.slice(0, 3).map(v => Math.round(v).toString(16).padStart(2, '0')).join('');
  const background = (el) => {
    const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let bg = [255, 255, 255, 1];  // the canvas under a page that paints no background
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  };
  const opacity = (el) => {
    let o = 1;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) o *= +getComputedStyle(e).opacity;
    return o;
  };
  const where = (el) => {
    const parts = [];
    for (let e = el; e && e.nodeType === 1 && parts.length < 3; e = e.parentElement) {
      const cls = [...e.classList].filter(c => !c.startsWith('lm-') && !c.startsWith('jp-')).slice(0, 2);
      parts.unshift(e.tagName.toLowerCase() + cls.map(c => '.' + c).join(''));
    }
    return parts.join(' > ');
  };
  const out = [], seen = new Set();
  for (const root of document.querySelectorAll(selector)) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      const text = node.textContent.trim();
      const el = node.parentElement;
      if (!text || !el || el.closest('svg, style, script') || (exclude && el.closest(exclude))) continue;
      if (el.closest(':disabled, [aria-disabled="true"]')) continue;
      if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const box = range.getBoundingClientRect();
      if (box.width < 1 || box.height < 1) continue;
      const style = getComputedStyle(el);
      const bg = background(el);
      const fg = rgba(style.color);
      fg[3] *= opacity(el);
      const ink = over(fg, bg);
      const [a, b] = [lum(ink), lum(bg)].sort((x, y) => y - x);
      const ratio = (a + 0.05) / (b + 0.05);
      const size = parseFloat(style.fontSize), bold = +style.fontWeight >= 700;
      const large = size >= 24 || (size >= 18.66 && bold);
      const need = large ? 3 : 4.5;
      const key = where(el) + hex(ink) + hex(bg);
      if (ratio < need && !seen.has(key)) {
        seen.add(key);
        out.push({text: text.slice(0, 40), ratio: Math.round(ratio * 100) / 100, need,
                  colour: hex(ink), background: hex(bg), size, where: where(el)});
      }
    }
  }
  return out;
}"""

_COUNT = """([selector, exclude]) => {
  let n = 0;
  for (const root of document.querySelectorAll(selector)) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      const el = node.parentElement;
      if (node.textContent.trim() && el && !(exclude && el.closest(exclude)) && el.checkVisibility()) n++;
    }
  }
  return n;
}"""


def offenders(page: Any, selector: str, *, exclude: str = "") -> list[dict]:
    """Every visible text under `selector` (not under `exclude`) below the WCAG AA ratio."""
    return page.evaluate(_MEASURE, [selector, exclude])


def text_nodes(page: Any, selector: str, *, exclude: str = "") -> int:
    """How many visible text nodes a measurement looks at (so a test can tell it saw the view)."""
    return page.evaluate(_COUNT, [selector, exclude])


def report(found: list[dict]) -> str:
    """One line per offender: where, its text, its colours and the ratio against the minimum."""
    return "\n".join(
        f"{o['where']}: {o['text']!r} {o['colour']} on {o['background']} = {o['ratio']}:1 (needs {o['need']}:1)"
        for o in found
    )


def set_lab_theme(page: Any, theme: str) -> None:
    """Switch the open JupyterLab to `theme` (its own command) and wait until the page wears it."""
    page.evaluate("(t) => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", theme)
    page.wait_for_function("(t) => document.body.dataset.jpThemeName === t", arg=theme, timeout=30_000)
    page.wait_for_timeout(300)  # the theme's stylesheet applies after the attribute changes


_DROP_VARIABLES = """() => {
  const names = new Set();
  const scan = (rules) => {
    for (const rule of rules) {
      if (rule.style) for (const p of rule.style) if (p.startsWith('--jp-')) names.add(p);
      if (rule.cssRules) scan(rule.cssRules);
    }
  };
  for (const sheet of document.styleSheets) { try { scan(sheet.cssRules); } catch (e) {} }
  const style = document.createElement('style');
  style.id = 'no-theme-variables';
  style.textContent = '*, :root { ' + [...names].map(n => n + ': initial !important;').join(' ') + ' }';
  document.head.appendChild(style);
  return names.size;
}"""


def drop_theme_variables(page: Any) -> int:
    """Unset every `--jp-*` variable the page's stylesheets define (so each `var(--jp-…, fallback)`
    takes its fallback, as on a page with no JupyterLab styles at all); how many there were."""
    return page.evaluate(_DROP_VARIABLES)
