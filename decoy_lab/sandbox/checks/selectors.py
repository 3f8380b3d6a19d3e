"""Memory reach per verb: a `Selector` each for read, write and delete, built from permission rows.

`memory.*` with no selection reaches every memory that is not about an account (`all`);
`datatypes` reaches those categories, `about` those topics; `acctmem.*` reaches memories about one
account (`account_id`) or every account (none: `account_wildcard`); `everything` reaches all of it;
`memory.save` sets `save` (a connection's own memories are the `self` reason, which no Selector grants).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from decoy_lab.sandbox.checks.grants import Row


@dataclass(frozen=True)
class Selector:
    """Which memories one verb reaches. `self` (own memories) is never granted by a Selector."""

    all: bool = False
    categories: frozenset[str] = frozenset()
    topics: frozenset[str] = frozenset()  # "topic:<id>"
    accounts: frozenset[str] = frozenset()
    account_wildcard: bool = False

    def union(self, other: Selector) -> Selector:
        return Selector(
            self.all or other.all,
            self.categories | other.categories,
            self.topics | other.topics,
            self.accounts | other.accounts,
            self.account_wildcard or other.account_wildcard,
        )

    def is_empty(self) -> bool:
        return not (self.all or self.categories or self.topics or self.accounts or self.account_wildcard)

    def allows_via(self, via: str) -> bool:
        """Does this selector hold the access reason `via` (`all`, `category:c`, `topic:id`,
        `account:id`, or `and:a+b` which needs every part)? `self` is never allowed here."""
        if via.startswith("and:"):
            parts = via[4:].split("+")
            return bool(parts) and all(p and not p.startswith("and:") and self.allows_via(p) for p in parts)
        if via == "all":
            return self.all
        if via.startswith("category:"):
            return self.all or via[len("category:") :] in self.categories
        if via.startswith("topic:"):
            return self.all or via in self.topics
        if via.startswith("account:"):
            return self.account_wildcard or via[len("account:") :] in self.accounts
        return False

    def as_json(self) -> dict[str, Any]:
        return {
            "all": self.all,
            "categories": sorted(self.categories),
            "topics": sorted(self.topics),
            "account_ids": sorted(self.accounts),
            "account_wildcard": self.account_wildcard,
        }

    def describe(self) -> str:
        """A few plain words: "all memories", "memories in food, travel", …"""
        parts = []
        if self.all:
            parts.append("all memories")
        else:
            if self.categories:
                parts.append("memories in " + ", ".join(sorted(self.categories)))
            if self.topics:
                n = len(self.topics)
                parts.append(f"memories about {n} topic" + ("s" if n != 1 else ""))
        if self.account_wildcard:
            parts.append("memories about every account")
        elif self.accounts:
            n = len(self.accounts)
            parts.append(f"memories about {n} account" + ("s" if n != 1 else ""))
        return " and ".join(parts) if parts else "nothing"


EMPTY = Selector()


EVERY = Selector(all=True, account_wildcard=True)


@dataclass(frozen=True)
class MemoryAccess:
    """What one connection may do with memories now."""

    save: bool = False
    read: Selector = field(default_factory=Selector)
    write: Selector = field(default_factory=Selector)
    delete: Selector = field(default_factory=Selector)

    def as_json(self) -> dict[str, Any]:
        return {
            "save": self.save,
            "read": self.read.as_json(),
            "write": self.write.as_json(),
            "delete": self.delete.as_json(),
            "summary": self.summary(),
        }

    def summary(self) -> str:
        """One plain sentence, e.g. "Saves new memories (and reads and edits its own); reads all memories."."""
        bits = []
        if self.save:
            bits.append("saves new memories (and reads and edits what it saved)")
        for verb, sel in (("reads", self.read), ("edits", self.write), ("deletes", self.delete)):
            if not sel.is_empty():
                bits.append(f"{verb} {sel.describe()}")
        if not bits:
            return "No memory access."
        text = "; ".join(bits)
        return text[0].upper() + text[1:] + "."


def _row_selector(row: Row) -> Selector:
    sel = row.sel
    if "datatypes" in sel:
        return Selector(categories=frozenset(sel["datatypes"]))
    if "about" in sel:
        return Selector(topics=frozenset(sel["about"]))
    return Selector(all=True)


def memory_access_from_rows(rows: Iterable[Row]) -> MemoryAccess:
    """Fold live rows into one MemoryAccess (see the module docstring for the semantics)."""
    save = False
    verbs = {"read": EMPTY, "edit": EMPTY, "delete": EMPTY}
    for row in rows:
        names = set(row.permissions)
        if "everything" in names:
            return MemoryAccess(True, EVERY, EVERY, EVERY)
        save = save or "memory.save" in names
        for verb in verbs:
            if f"memory.{verb}" in names:
                verbs[verb] = verbs[verb].union(_row_selector(row))
            if f"acctmem.{verb}" in names:
                acct = row.sel.get("account_id")
                add = Selector(accounts=frozenset({acct})) if acct else Selector(account_wildcard=True)
                verbs[verb] = verbs[verb].union(add)
    return MemoryAccess(save, verbs["read"], verbs["edit"], verbs["delete"])
