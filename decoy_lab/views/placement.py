"""Where the drawn Map's labels go: a board of what is already on the page (dots, placed labels)
in display pixels, and the candidate spots beside a dot, tried in order until one is free.

Every shape is a convex polygon (a label's box, rotated or not; a dot's bounding square), kept in
a coarse grid so a 500-topic map checks each candidate against its neighbours only.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

Point = tuple[float, float]
Poly = list[Point]

CELL = 48.0  # px: the grid's cell, about one short label wide


def box(x0: float, y0: float, w: float, h: float) -> Poly:
    """An upright rectangle from its lower-left corner (display y runs up)."""
    return [(x0, y0), (x0 + w, y0), (x0 + w, y0 + h), (x0, y0 + h)]


def rotated(anchor: Point, w: float, h: float, angle: float, x_from: float) -> Poly:
    """A w×h box turned by `angle` (radians) about `anchor`; along the turned x axis it spans
    [x_from, x_from + w], across it [-h/2, h/2]."""
    c, s = math.cos(angle), math.sin(angle)
    ax, ay = anchor
    return [
        (ax + x * c - y * s, ay + x * s + y * c)
        for x, y in ((x_from, -h / 2), (x_from + w, -h / 2), (x_from + w, h / 2), (x_from, h / 2))
    ]


def separated(p: Sequence[Point], q: Sequence[Point], gap: float = 1.0) -> bool:
    """Separating-axis test for two convex polygons: True when they are at least `gap` px apart
    along some edge normal of either."""
    for poly in (p, q):
        n = len(poly)
        for i in range(n):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % n]
            nx, ny = y2 - y1, x1 - x2
            norm = math.hypot(nx, ny)
            if norm == 0:
                continue
            pa = [(nx * x + ny * y) / norm for x, y in p]
            qa = [(nx * x + ny * y) / norm for x, y in q]
            if max(pa) + gap <= min(qa) or max(qa) + gap <= min(pa):
                return True
    return False


def bounds(poly: Sequence[Point]) -> tuple[float, float, float, float]:
    xs, ys = [x for x, _ in poly], [y for _, y in poly]
    return min(xs), min(ys), max(xs), max(ys)


class Board:
    """What is on the page so far; `free(poly)` is True when poly touches none of it."""

    def __init__(self) -> None:
        self._grid: dict[tuple[int, int], list[tuple[Poly, tuple[float, float, float, float], bool]]] = {}

    @staticmethod
    def _cells(b: tuple[float, float, float, float]) -> Iterator[tuple[int, int]]:
        x0, y0, x1, y1 = b
        for gx in range(math.floor(x0 / CELL), math.floor(x1 / CELL) + 1):
            for gy in range(math.floor(y0 / CELL), math.floor(y1 / CELL) + 1):
                yield gx, gy

    def take(self, poly: Poly) -> None:
        shape = (poly, bounds(poly), upright(poly))
        for cell in self._cells(shape[1]):
            self._grid.setdefault(cell, []).append(shape)

    def take_dot(self, centre: Point, radius: float) -> None:
        x, y = centre
        self.take(box(x - radius, y - radius, 2 * radius, 2 * radius))

    def free(self, poly: Poly, gap: float = 1.0) -> bool:
        b, straight = bounds(poly), upright(poly)
        seen: set[int] = set()
        for cell in self._cells(b):
            for other, ob, other_straight in self._grid.get(cell, ()):
                if id(other) in seen:
                    continue
                seen.add(id(other))
                # Boxes apart on x or y are apart; two upright boxes that are not, touch.
                if b[2] + gap <= ob[0] or ob[2] + gap <= b[0] or b[3] + gap <= ob[1] or ob[3] + gap <= b[1]:
                    continue
                if (straight and other_straight) or not separated(poly, other, gap):
                    return False
        return True


def upright(poly: Sequence[Point]) -> bool:
    """A rectangle with its sides along the axes (as `box` makes them)."""
    return len(poly) == 4 and poly[0][1] == poly[1][1] and poly[1][0] == poly[2][0]


def beside(centre: Point, radius: float, w: float, h: float, *, left: bool, up: bool, gap: float = 3.0) -> list[Poly]:
    """The upright spots for a w×h label beside a dot, best first: on the side away from the
    middle of the map (`left`, `up` say which that is), then the other side, above or below, then
    the four corners, outer ones first."""
    x, y = centre
    r = radius + gap
    right, leftward = box(x + r, y - h / 2, w, h), box(x - r - w, y - h / 2, w, h)
    above, below = box(x - w / 2, y + r, w, h), box(x - w / 2, y - r - h, w, h)
    d = r * 0.72
    ur, ul = box(x + d, y + d, w, h), box(x - d - w, y + d, w, h)
    lr, ll = box(x + d, y - d - h, w, h), box(x - d - w, y - d - h, w, h)
    sides = [leftward, right] if left else [right, leftward]
    ends = [above, below] if up else [below, above]
    corners = {(False, True): [ur, lr, ul, ll], (True, True): [ul, ll, ur, lr]}
    corners |= {(False, False): [lr, ur, ll, ul], (True, False): [ll, ul, lr, ur]}
    return [*sides, *ends, *corners[(left, up)]]


def outward(centre: Point, origin: Point, radius: float, w: float, h: float, gap: float = 3.0) -> Poly:
    """A label turned along the spoke from `origin` through the dot, starting past the dot's rim."""
    angle = math.atan2(centre[1] - origin[1], centre[0] - origin[0])
    return rotated(centre, w, h, angle, radius + gap)
