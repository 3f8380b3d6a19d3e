"""Who can read this memory, and why: memories × connections, each cell the `via` reason.

The memory contract: "`via` records the access reason: `self`, `all`, `category:<c>`,
`topic:<id>`, `account:<id>`, or an all-of reason such as `and:topic:<a>+account:<b>`", and
"Labels (its categories, its topic, an account) decide which connections reach a memory". So
the reasons are computed here on the client side, from each connection's selectors (what
`memory-grantees` lists as `self.selectors`) and each row's labels (`memory.reasons_for`, plus
`self` on the connection's own rows), and compared with the `via` the server serves to that
connection now. A cell that differs is flagged: the server serves a reason the labels do not
give (or leaves one out), or a row is owed but not shared yet.

`build(readers, rows)` takes `Reader`s (a name, selectors, the rows served to it) and the rows
whose labels are known (`Labelled`: id, what it is, its decoded plaintext); `from_connections`
builds both from paired `Connection`s (each decodes what it is served), optionally with the
owner's stored rows and key (a sandbox: `sb.owner.rows()`, `sb.owner.key`) so rows nobody reads
are rows too.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from decoy_lab import memory
from decoy_lab.recipes import sealing
from decoy_lab.transport import routes


@dataclass
class Reader:
    """One connection as the matrix sees it: its name, read selectors, and what it is served now
    (row id → served `via`; `mine` holds the ids of its own rows)."""

    name: str
    selectors: Mapping[str, Any]
    served: dict[str, list[str]] = field(default_factory=dict)
    mine: set[str] = field(default_factory=set)


@dataclass
class Labelled:
    """A row whose plaintext is known: its id, a short title and the decoded plaintext."""

    id: str
    title: str
    plain: memory.Plain


@dataclass
class Matrix:
    """`frame`: one row per memory, one column per connection, each cell the reasons that reach it
    (or why none does); `expected` / `served`: the same as lists; `differences`: the cells where
    the client's reasons and the server's `via` differ."""

    frame: pd.DataFrame
    expected: pd.DataFrame
    served: pd.DataFrame
    differences: pd.DataFrame

    @property
    def agrees(self) -> bool:
        return self.differences.empty

    @property
    def notable(self) -> pd.Series:
        """Per row: whether a reason singles it out. Some connection reaches it by more than a
        grant on all memories (its own row `self`, a category, a topic, an account, an `and:`
        reason), or a cell differs from what the server serves. The other rows are alike: read
        only through a grant on everything, or by no grant at all."""
        special = pd.Series(False, index=self.expected.index)
        for column in self.expected.columns:
            special |= self.expected[column].map(lambda reasons: any(r != "all" for r in reasons or []))
        return special | self.expected.index.isin(self.differences["id"])

    def shown(self, everything: bool = False) -> pd.DataFrame:
        """The rows worth reading (`notable`), or `everything`."""
        return self.frame if everything else self.frame[self.notable]

    def left_out(self) -> str:
        """What the rows `shown` leaves out have in common, in words ("" when none is left out):
        read only through a grant on all memories (by whom), or by no connection at all."""
        hidden = self.expected[~self.notable]
        if hidden.empty:
            return ""
        reached = pd.Series(False, index=hidden.index)
        for column in hidden.columns:
            reached |= hidden[column].map(lambda reasons: bool(reasons))
        parts = []
        n = int(reached.sum())
        if n:
            alls = [c for c in hidden.columns if any(hidden.loc[reached, c].map(bool))]
            parts.append(f"{n} only through a grant on all memories ({', '.join(alls)})")
        if len(hidden) - n:
            parts.append(f"{len(hidden) - n} by no connection")
        rows = "row is" if len(hidden) == 1 else "rows are"
        return f"{len(hidden)} more {rows} read alike, and no other grant reaches them: {'; '.join(parts)}"

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        note = self.left_out()
        more = f"<p><i>{html.escape(note)} (<code>.frame</code> holds every row).</i></p>" if note else ""
        return self.shown()._repr_html_() + more


def why_none(sel: memory.Selectors, plain: memory.Plain) -> str:
    """Why no reason reaches this row for these selectors, in words."""
    if plain.kind == "memory" and plain.account_id:
        return f"no grant on account:{plain.account_id}"
    labels = [lab for lab in plain.labels if lab != "user"]
    return f"no grant on {', '.join(labels)}" if labels else "no grant reaches a row with no labels"


def expected_reasons(reader: Reader, row: Labelled) -> list[str]:
    out = memory.reasons_for(reader.selectors, row.plain)
    return ["self", *out] if row.id in reader.mine else out


_LABEL = re.compile(r"\b(?:topic|account):[0-9A-Za-z-]+")


def named(reason: str, names: Mapping[str, str]) -> str:
    """`reason` with each topic or account it names followed by that name: `topic:<id> (Golf)`
    (names: `topic:<id>` / `account:<id>` → name; one without a name stays as it is)."""
    return _LABEL.sub(lambda m: f"{m[0]} ({names[m[0]]})" if names.get(m[0]) else m[0], reason)


def build(readers: Sequence[Reader], rows: Iterable[Labelled], names: Mapping[str, str] | None = None) -> Matrix:
    """The matrix; `names` (`topic:<id>` / `account:<id>` → name) names what the cells' reasons
    refer to (the lists in `expected` / `served` keep the reasons exactly as they are)."""
    rows = list(rows)
    names = names or {}
    index = pd.Index([r.id for r in rows], name="id")
    titles = [r.title for r in rows]
    exp: dict[str, list] = {}
    got: dict[str, list] = {}
    text: dict[str, list] = {}
    diffs = []
    for reader in readers:
        sel = memory.Selectors.from_json(reader.selectors)
        exp[reader.name], got[reader.name], text[reader.name] = [], [], []
        for row in rows:
            want = expected_reasons(reader, row)
            served = reader.served.get(row.id)
            exp[reader.name].append(want)
            got[reader.name].append(served)
            cell = ", ".join(want) if want else f"— {why_none(sel, row.plain)}"
            if set(want) != set(served or []):
                seen = ", ".join(served) if served else "not served"
                cell += f"  ≠ served: {seen}"
                diffs.append(
                    {"id": row.id, "title": row.title, "connection": reader.name, "expected": want, "served": served}
                )
            text[reader.name].append(named(cell, names))
    frame = pd.DataFrame({"memory": titles, **text}, index=index)
    return Matrix(
        frame,
        pd.DataFrame(exp, index=index),
        pd.DataFrame(got, index=index),
        pd.DataFrame(diffs, columns=["id", "title", "connection", "expected", "served"]),
    )


def _title(plain: memory.Plain) -> str:
    if plain.kind == "memory":
        return plain.text or ""
    if plain.kind == "topic":
        return f"topic {plain.name!r}"
    if plain.kind == "link":
        return f"{plain.relation_from} —{plain.relation_type}→ {plain.relation_to}"
    return plain.kind


def _decode(row: Mapping, key: bytes) -> memory.Plain:
    obj = sealing.open_json(key, row["ciphertext"], row_id=row["id"])
    return memory.decode_plaintext(obj, row["id"])


def from_connections(
    connections: Mapping[str, Any], *, owner_rows: Sequence[Mapping] = (), owner_key: Any = None
) -> Matrix:
    """The matrix for paired connections (name → Connection): each one's selectors from
    memory-grantees and what it is served now; labels from every row any of them opens (and, with
    `owner_rows` and `owner_key`, every stored row the owner's app opens)."""
    readers, labelled = [], {}
    accounts: dict[str, str] = {}
    for name, conn in connections.items():
        if not accounts:  # the authorized account list, as the first connection that may list it sees it
            accounts = {f"account:{k}": v for k, v in conn.account_names().items()}
        s = conn.session
        grantees = s.get(routes.GRANTEES)
        reader = Reader(name, (grantees.get("self") or {}).get("selectors") or {})
        for row in s.served():
            reader.served[row["id"]] = list(row.get("via") or [])
            if row.get("mine"):
                reader.mine.add(row["id"])
            if row["id"] in labelled or not row.get("wrapped_key"):
                continue
            try:
                key = sealing.unwrap_as_agent(row["wrapped_key"], s.agent_key)
                plain = _decode(row, key)
            except Exception:
                continue
            labelled[row["id"]] = Labelled(row["id"], _title(plain), plain)
        readers.append(reader)
    for row in owner_rows:
        if row.get("id") in labelled or row.get("kind") == "space_row" or not row.get("owner_wrap"):
            continue
        try:
            plain = _decode(row, sealing.unwrap_as_owner(row["owner_wrap"], owner_key))
        except Exception:
            continue
        labelled[row["id"]] = Labelled(row["id"], _title(plain), plain)
    topics = {f"topic:{r.id}": r.plain.name for r in labelled.values() if r.plain.kind == "topic" and r.plain.name}
    rows = [r for r in labelled.values() if r.plain.kind in ("memory", "topic", "link")]
    return build(readers, rows, {**accounts, **topics})
