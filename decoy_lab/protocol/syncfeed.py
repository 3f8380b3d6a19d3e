"""The sync feed, followed in one place: `GET /api/agent/sync` page by page from a cursor.

The rules, written once here for `Connection.sync` and a reopen through the local cache
(store/cache.py, which is handed `changes_since` and `anchor`: the store sits below the rules):
- follow `state` while `hasMore`; "more" from a state that did not move is a TransportError
  (it would be asked for forever);
- a pruned cursor (410) means the changes since it are gone: read everything, anchor again at
  `/api/agent/sync/head`;
- past MAX_SYNC_PAGES pages, read everything instead.

One cap, 200 pages: a full read is one GET of every row, and a feed that needs more than 200
round trips to say what changed costs more than reading it; a reopen through the cache stops at
the first page that shows a change anyway (it then reads in full), so its walk meets the cap only
on a feed that says "more" with nothing this connection sees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from decoy_lab.errors import APIError, TransportError
from decoy_lab.protocol.session import Session
from decoy_lab.transport import routes
from decoy_lab.transport.api import expect_object
from decoy_lab.vault.read import Vault
from decoy_lab.vault.waiting import answer_waits

MAX_SYNC_PAGES = 200  # pages of changes one walk follows before it reads everything instead
BUCKET = ("created", "updated", "destroyed")


@dataclass
class SyncResult:
    """What `sync` found: the ids that changed, and whether everything was reloaded."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    destroyed: list[str] = field(default_factory=list)
    full_reload: bool = False
    reason: str = ""
    cursor: str | None = None
    vault: Vault | None = field(default=None, repr=False)

    @property
    def changed(self) -> int:
        return len(self.created) + len(self.updated) + len(self.destroyed)

    def __str__(self) -> str:
        if self.full_reload:
            return f"full reload ({self.reason})"
        return f"{len(self.created)} created, {len(self.updated)} updated, {len(self.destroyed)} destroyed"


@dataclass
class Feed:
    """What one walk of the feed found. `full`: why everything must be read instead ("" when the
    feed said all); `more`: it stopped at the first change with pages still to come."""

    cursor: str | None
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    destroyed: list[str] = field(default_factory=list)
    full: str = ""
    more: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.destroyed)


def walk(get: Callable[..., dict], cursor: str, *, until_change: bool = False) -> Feed:
    """Follow the feed from `cursor` (`get(path, params, **members)` a checked GET). With
    `until_change`, stop at the first page that shows a change. A 410 is `full`; any other
    refusal is raised."""
    feed = Feed(cursor)
    try:
        for _page in range(MAX_SYNC_PAGES):
            ans = get(routes.SYNC, {"cursor": feed.cursor}, changes=dict, state=(str, int))
            _collect(feed, ans.get("changes") or {})
            before, feed.cursor = feed.cursor, str(ans.get("state", feed.cursor))
            if not ans.get("hasMore"):
                return feed
            if until_change and feed.changed:
                feed.more = True
                return feed
            if feed.cursor == before:  # "more" from the same place would be asked for forever
                raise TransportError(f"GET {routes.SYNC}: hasMore is set but the state did not move; sync again later")
    except APIError as exc:
        if exc.status != 410:
            raise
        feed.full = "the cursor was pruned (410)"
        return feed
    feed.full = f"the changes ran over {MAX_SYNC_PAGES} pages"
    return feed


def _collect(feed: Feed, changes: dict) -> None:
    """Add one page's changes (each bucket checked: lists of ids) to `feed`."""
    for name, bucket in changes.items():
        if isinstance(bucket, dict):
            expect_object(bucket, f"GET {routes.SYNC}: changes.{name}", **dict.fromkeys(BUCKET, list[str]))
            feed.created += bucket.get("created") or []
            feed.updated += bucket.get("updated") or []
            feed.destroyed += bucket.get("destroyed") or []


def head(get: Callable[..., dict]) -> str | None:
    """The sync head now (`GET /api/agent/sync/head`; None when the server names none)."""
    got = get(routes.SYNC_HEAD, head=(str, int)).get("head")
    return str(got) if got is not None else None


def anchor(get: Callable[..., dict]) -> str | None:
    """The sync head now, None also when the server keeps no change feed for this connection."""
    try:
        return head(get)
    except APIError:
        return None


def changes_since(get: Callable[..., dict], cursor: str) -> tuple[bool | None, str | None]:
    """Did anything this connection sees change since `cursor`, and the feed's state after it
    (the next cursor, "persist the returned state")? The state is None when a change was found
    with more pages still to come (a full read follows; it anchors afresh); both are None when
    the feed cannot say: the cursor was pruned (410), the server refuses the feed or answers
    what cannot be read, or it says "more" forever."""
    try:
        feed = walk(get, cursor, until_change=True)
    except (APIError, TransportError):
        return None, None
    if feed.full:
        return None, None
    return (True, None) if feed.more else (feed.changed, feed.cursor)


def waiting(vault: Vault | None) -> bool:
    """Were keys still on their way at `vault`'s load (they may arrive with no change logged)?"""
    return vault is not None and answer_waits(vault.answer)


def sync(
    session: Session,
    cursor: str | None,
    *,
    load: Callable[[], Any],
    anchor: Callable[[], str | None],
    keep: Callable[[str | None], None],
) -> SyncResult:
    """`Connection.sync`: follow the feed from `cursor` and reload only when something changed
    (or keys were on their way); no cursor, a pruned one or too many pages: `load` everything and
    `anchor` again. `keep(cursor)` saves the feed's state before any reload."""
    if cursor is None:
        return _reloaded("no cursor yet: loaded everything and anchored", load, anchor)
    feed = walk(session.get, cursor)
    if feed.full:
        return _reloaded(f"{feed.full}: reloaded everything", load, anchor)
    keep(feed.cursor)
    res = SyncResult(feed.created, feed.updated, feed.destroyed, cursor=feed.cursor)
    last = session.vault
    if res.changed or last is None or waiting(last):  # keys shared meanwhile log no change
        load()
    res.vault = session.vault
    return res


def _reloaded(reason: str, load: Callable[[], Any], anchor: Callable[[], str | None]) -> SyncResult:
    vault = load()
    return SyncResult(full_reload=True, reason=reason, cursor=anchor(), vault=vault)
