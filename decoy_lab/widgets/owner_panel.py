"""The owner's phone in a notebook: the other side of an end-to-end-encrypted share.

`OwnerPanel(sb.owner)` shows what the Decoy app shows its owner and does what it does, through
the sandbox's `Owner` (sandbox/phone/owner.py, sandbox/phone/ownerapp.py): what is waiting
(Approve as asked or narrowed, Deny), the account family's asks (an unlock: Allow, Don't allow; a
queued edit of a Decoy address: Apply, Reject with one of 001's codes), the memories ten to a page with the selected one's text,
topic and Delete, topics (Rename), each connection's grants picked rather than typed (Set,
Give more, Revoke) and key setup. Every widget is made once: an action or a change the panel
sees (it polls the owner every `follow` seconds, so a new pairing shows by itself) changes
values and options in place, never the tree, so the front end never meets a closed model.
The status line says what was done in words: connection and topic names, not ids.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from decoy_lab.text import plural
from decoy_lab.widgets.html import esc
from decoy_lab.widgets.owner_parts import (
    STYLE,
    asks,
    button,
    edit_label,
    follow_owner,
    headlines,
    memory_details,
    memory_label,
    resolved_as,
    set_options,
    shared,
    short,
    unlock_label,
    what,
    wide_choice,
)
from decoy_lab.widgets.pickers import GrantPicker

YOU = "You (no topic)"
PAGE = 10
#: how the owner's app says why it rejects an edit (001's fixed codes)
REJECT_REASONS = [
    ("the values are not allowed", "patch_invalid"),
    ("it names nothing the app changes", "no_supported_keys"),
    ("the patch does not open", "patch_unopenable"),
    ("the address's details do not open", "decoy_unreadable"),
]


class OwnerPanel(W.VBox):
    """The owner's phone for one sandbox owner (`sb.owner`); `follow` seconds between looks (0: none)."""

    def __init__(self, owner: Any, *, follow: float = 1.0):
        self.owner = owner
        self.page = 0
        self._lock = threading.RLock()
        self._mark: Any = None
        self._view: list[dict] = []
        self._pending: dict[str, dict] = {}
        self._conns: dict[str, dict] = {}
        self._unlocks: dict[str, dict] = {}
        self._edits: dict[str, dict] = {}
        self._grants: dict[str, dict] = {}
        self._loaded: dict[str, Any] = {}  # editor → what it was last loaded from
        self._muted = False  # the panel is changing a choice's options itself
        self.topic_names: dict[str, str] = {}
        self.status = W.HTML(layout=W.Layout(min_height="1.6em"))
        self.status.add_class("decoy-owner-status")
        self.summary = W.HTML()
        self.key_switch = W.ToggleButton(icon="key", layout=W.Layout(width="auto"))
        self.key_switch.add_class("decoy-owner-key")
        self.buttons: dict[str, W.Button] = {}  # action → its one button (it acts on what is selected)
        self.fields: dict[str, W.Widget] = {}  # input → its one widget
        super().__init__(
            [
                W.HTML(STYLE),
                W.HBox(
                    [
                        W.HTML("<span class='decoy-owner-head'>Owner's phone</span>"),
                        self.key_switch,
                        self._act("share", button("Share now", name="share"), self._share),
                        self.summary,
                    ]
                ),
                self._waiting_section(),
                self._account_section(),
                self._memory_section(),
                self._topic_section(),
                self._connection_section(),
                self.status,
            ]
        )
        self.add_class("decoy-owner")
        self.key_switch.observe(self._on_key, names="value")
        self.refresh()
        self._stop = threading.Event()
        if follow > 0:
            follow_owner(weakref.ref(self), self._stop, follow)

    # ── the sections, made once ──────────────────────────────────────────────────────────
    def _section(self, name: str, title: W.HTML, *rows: W.Widget) -> W.VBox:
        box = W.VBox([title, *rows])
        box.add_class("decoy-owner-section")
        box.add_class(f"decoy-owner-{name}")
        return box

    def _act(self, key: str, button: W.Button, action: Callable[[], str]) -> W.Button:
        button.on_click(lambda _b: self._do(button.description, action))
        self.buttons[key] = button
        return button

    def _field(self, key: str, widget: W.Widget) -> W.Widget:
        widget.add_class(f"decoy-owner-{key}")
        self.fields[key] = widget
        return widget

    def _waiting_section(self) -> W.Widget:
        self.waiting_title = W.HTML()
        pick = self._field("pending", W.Dropdown(options=[], layout=W.Layout(width="60%")))
        self.pending_info = W.HTML()
        self.narrow = GrantPicker()
        self.fields["narrow"] = self.narrow
        buttons = W.HBox(
            [
                self._act("approve", button("Approve as asked", "success", "approve"), self._approve),
                self._act("approve-narrowed", button("Approve narrowed", "info"), lambda: self._approve(narrow=True)),
                self._act("deny", button("Deny", "danger"), self._deny),
            ]
        )
        self.waiting_body = W.VBox([pick, self.pending_info, buttons, self.narrow])
        pick.observe(self._picked(lambda _c: self._show_pending()), names="value")
        return self._section("waiting", self.waiting_title, self.waiting_body)

    def _account_section(self) -> W.Widget:
        self.account_title = W.HTML()
        unlock = self._field("unlock", wide_choice())
        self.unlock_row = W.HBox(
            [
                unlock,
                self._act("allow-unlock", button("Allow", "success", "allow-unlock"), self._allow_unlock),
                self._act("deny-unlock", button("Don't allow", "danger", "deny-unlock"), self._deny_unlock),
            ]
        )
        edit = self._field("decoy-edit", wide_choice())
        reason = self._field("reject-reason", W.Dropdown(options=REJECT_REASONS, description="because"))
        self.edit_rows = W.VBox(
            [
                W.HBox(
                    [edit, self._act("apply-edit", button("Apply edit", "success", "apply-edit"), self._apply_edit)]
                ),
                W.HBox(
                    [
                        reason,
                        self._act("reject-edit", button("Reject edit", "warning", "reject-edit"), self._reject_edit),
                    ]
                ),
            ]
        )
        return self._section("accounts", self.account_title, self.unlock_row, self.edit_rows)

    def _memory_section(self) -> W.Widget:
        self.memory_title = W.HTML()
        pick = self._field("memory", W.Select(options=[], rows=PAGE, layout=W.Layout(width="98%")))
        self.page_label = W.HTML()
        pager = W.HBox(
            [
                self._pager("prev", "◀ Prev", -1),
                self.page_label,
                self._pager("next", "Next ▶", +1),
            ]
        )
        self.memory_info = W.HTML()
        text = self._field("text", W.Text(layout=W.Layout(width="60%")))
        where = self._field("topic", W.Dropdown(options=[(YOU, None)], description="file under"))
        edit = W.HBox([text, self._act("edit", button("Save text", name="edit"), self._edit)])
        refile = W.HBox(
            [
                where,
                self._act("refile", button("Re-file", name="refile"), self._refile),
                self._act("delete", button("Delete", "danger"), self._delete),
            ]
        )
        self.memory_editor = W.VBox([self.memory_info, edit, refile])
        pick.observe(self._picked(lambda _c: self._show_memory()), names="value")
        return self._section("memories", self.memory_title, pager, pick, self.memory_editor)

    def _pager(self, key: str, label: str, step: int) -> W.Button:
        b = button(label, name=key)
        b.on_click(lambda _b: self.turn(step))
        self.buttons[key] = b
        return b

    def _topic_section(self) -> W.Widget:
        self.topic_title = W.HTML()
        pick = self._field("topic-pick", W.Dropdown(options=[], description="topic"))
        name = self._field("name", W.Text(placeholder="new name"))
        pick.observe(self._picked(lambda _c: self._show_topic()), names="value")
        rename = self._act("rename", button("Rename"), self._rename)
        return self._section("topics", self.topic_title, W.HBox([pick, name, rename]))

    def _connection_section(self) -> W.Widget:
        self.conn_title = W.HTML()
        conn = self._field("connection", W.Dropdown(options=[], description="connection"))
        self.conn_info = W.HTML()
        grant = self._field("grant", W.Dropdown(options=[], description="grant", layout=W.Layout(width="70%")))
        self.grant_picker = GrantPicker()
        self.fields["grant-rows"] = self.grant_picker
        buttons = W.HBox(
            [
                self._act("set-grant", button("Set this grant", "info", "set-grant"), self._set_grant),
                self._act("give", button("Give as a new grant", name="give"), self._give),
                self._act("revoke-grant", button("Revoke grant", "warning", "revoke-grant"), self._revoke_grant),
                self._act("revoke", button("Revoke connection", "danger", "revoke"), self._revoke),
            ]
        )
        self.conn_body = W.VBox([conn, self.conn_info, grant, self.grant_picker, buttons])
        conn.observe(self._picked(lambda _c: self._show_connection()), names="value")
        grant.observe(self._picked(lambda _c: self._show_grant()), names="value")
        return self._section("connections", self.conn_title, self.conn_body)

    # ── keeping up: values and options change, widgets stay ─────────────────────────────
    def look(self) -> Any:
        """What the panel shows, in a cheap form to compare: pending, connections, row revisions, key."""
        rows = tuple((r["id"], r["rev"]) for r in self.owner.rows())
        conns = tuple((c["token_id"], c["revoked"], c["access_version"], c["name"]) for c in self.owner.connections())
        pending = tuple(p["request_id"] for p in self.owner.pending())
        accounts = tuple(u["id"] for u in self.owner.unlocks()), tuple(e["id"] for e in self.owner.decoy_edits())
        return rows, conns, pending, accounts, self.owner.key_ready

    def refresh(self, mark: Any = None) -> None:
        """Read the owner's state and change what shows; nothing is rebuilt."""
        with self._lock:
            self._mark = mark if mark is not None else self.look()
            self._view = self.owner.app_view()
            topics = [e for e in self._view if e.get("kind") == "topic" and e.get("readable")]
            self.topic_names = {t["topic_id"]: t.get("name") or "(no name)" for t in topics}
            self._pending = {p["request_id"]: p for p in self.owner.pending()}
            self._conns = {c["token_id"]: c for c in self.owner.connections()}
            self._unlocks = {u["id"]: u for u in self.owner.unlocks()}
            self._edits = {e["id"]: e for e in self.owner.decoy_edits()}
            named = sorted(((short(n, 40), t) for t, n in self.topic_names.items()), key=lambda p: p[0].lower())
            self.key_switch.unobserve(self._on_key, names="value")
            self.key_switch.value = bool(self.owner.key_ready)
            self.key_switch.description = "Key setup done" if self.key_switch.value else "Key setup pending"
            self.key_switch.observe(self._on_key, names="value")
            self._options(self.fields["topic"], [(YOU, None), *named])
            self._options(self.fields["topic-pick"], named)
            self._show_topic()
            self.narrow.set_topics(named)
            self.grant_picker.set_topics(named)
            self._show_waiting()
            self._show_accounts()
            self._show_page()
            self.topic_title.value = f"<span class='decoy-owner-title'>Topics</span> ({len(topics)})"
            self._show_connections()
            live = sum(1 for c in self._conns.values() if not c["revoked"])
            self.summary.value = f"<span class='decoy-owner-note'>{esc(plural(live, 'connection'))} live</span>"

    def _show_waiting(self) -> None:
        n = len(self._pending)
        self.waiting_title.value = f"<span class='decoy-owner-title'>Waiting for you</span> ({n})" + (
            "" if n else " <span class='decoy-owner-note'>· nothing is waiting</span>"
        )
        self.waiting_body.layout.display = None if n else "none"
        labels = [(f"{p['name']} asks {asks(p)}", ref) for ref, p in self._pending.items()]
        self._options(self.fields["pending"], labels)
        self._show_pending()

    def _show_accounts(self) -> None:
        n, m = len(self._unlocks), len(self._edits)
        self.account_title.value = (
            f"<span class='decoy-owner-title'>Accounts</span> ({plural(n, 'unlock')}, {plural(m, 'address edit')})"
            + ("" if n or m else " <span class='decoy-owner-note'>· nothing is waiting</span>")
            + (f" <span class='decoy-owner-note'>· {esc(self._edits_note())}</span>" if m else "")
        )
        self.unlock_row.layout.display = None if n else "none"
        self.edit_rows.layout.display = None if m else "none"
        self._options(self.fields["unlock"], [(unlock_label(u), ref) for ref, u in self._unlocks.items()])
        self._options(self.fields["decoy-edit"], [(edit_label(e), ref) for ref, e in self._edits.items()])

    def _show_pending(self) -> None:
        p = self._pending.get(self.fields["pending"].value)
        if p is None:
            self.pending_info.value = ""
            return
        lines = "".join(f"<li>{esc(h)}</li>" for h in p.get("headlines") or []) or "<li>nothing named</li>"
        warn = "".join(f"<div class='decoy-owner-warn'>⚠ {esc(w)}</div>" for w in p.get("warnings") or [])
        code = f" · code {esc(p['user_code'])}" if p.get("user_code") else ""
        why = "".join(f" · “{esc(r)}”" for r in p.get("reasons") or [])
        again = " · already connected: approving continues that connection" if p.get("reconnect") else ""
        self.pending_info.value = (
            f"<span class='decoy-owner-note'>asked{code}{why}{again}:</span><ul>{lines}</ul>{warn}"
        )
        if self._fresh("pending", p["request_id"]):
            self.narrow.show(p.get("permissions") or [])

    def _show_topic(self) -> None:
        tid = self.fields["topic-pick"].value
        if self._fresh("topic", (tid, self.topic_names.get(tid))):
            self.fields["name"].value = self.topic_names.get(tid, "")

    def memories(self) -> list[dict]:
        return [e for e in self._view if e.get("kind") in ("memory", "unknown")]

    def turn(self, step: int) -> None:
        """Show the next (+1) or the previous (-1) page of memories."""
        with self._lock:
            self.page += step
            self._show_page()

    def _show_page(self) -> None:
        mems = self.memories()
        pages = max(1, -(-len(mems) // PAGE))
        self.page = min(max(self.page, 0), pages - 1)
        shown = mems[self.page * PAGE : (self.page + 1) * PAGE]
        self.memory_title.value = f"<span class='decoy-owner-title'>Memories</span> ({len(mems)})"
        self.page_label.value = f"&nbsp;page {self.page + 1} of {pages}&nbsp;"
        self.buttons["prev"].disabled, self.buttons["next"].disabled = self.page == 0, self.page >= pages - 1
        pick = self.fields["memory"]
        self._options(pick, [(memory_label(m), m["id"]) for m in shown])
        self._show_memory()

    def selected_memory(self) -> dict | None:
        mid = self.fields["memory"].value
        return next((m for m in self.memories() if m["id"] == mid), None)

    def _show_memory(self) -> None:
        m = self.selected_memory()
        self.memory_editor.layout.display = None if m else "none"
        if m is None:
            return
        readable = bool(m.get("readable"))
        for key in ("edit", "refile"):
            self.buttons[key].disabled = not readable
        self.memory_info.value = memory_details(m)
        if readable and self._fresh("memory", (m["id"], m.get("rev"))):
            self.fields["text"].value = m.get("text") or ""
            topic = (m.get("topic") or {}).get("id")
            self.fields["topic"].value = topic if topic in self.topic_names else None

    def _show_connections(self) -> None:
        live = [c for c in self._conns.values() if not c["revoked"]]
        gone = len(self._conns) - len(live)
        self.conn_title.value = f"<span class='decoy-owner-title'>Connections and their grants</span> ({len(live)})" + (
            f" <span class='decoy-owner-note'>· {gone} revoked</span>" if gone else ""
        )
        self.conn_body.layout.display = None if live else "none"
        self._options(self.fields["connection"], [(c["name"], c["token_id"]) for c in live])
        self._show_connection()

    def _show_connection(self) -> None:
        c = self._conns.get(self.fields["connection"].value)
        if c is None:
            self.conn_info.value = ""
            return
        ends = f" · access ends {esc(c['ends_at'])}" if c.get("ends_at") else ""
        self.conn_info.value = f"<span class='decoy-owner-note'>memories: {esc(c.get('memories'))}{ends}</span>"
        self._grants = {g["policy_id"]: g for g in self.owner.grants_of(c["token_id"])}
        options = [(short(headlines(g["rows"], self.topic_names), 90), pid) for pid, g in self._grants.items()]
        self._options(self.fields["grant"], options)
        self._show_grant()

    def _show_grant(self) -> None:
        g = self._grants.get(self.fields["grant"].value)
        for key in ("set-grant", "revoke-grant"):
            self.buttons[key].disabled = g is None
        if g is not None and self._fresh("grant", (g["policy_id"], repr(g["rows"]))):
            self.grant_picker.show(g["rows"])

    def _picked(self, show: Callable[[dict], Any]) -> Callable[[dict], None]:
        """A choice's observer: the owner's pick shows what was picked; the panel's own option
        changes (a choice passing through another value on its way back) show nothing."""
        return lambda change: None if self._muted else show(change)

    def _options(self, widget: W.Widget, options: list[tuple[str, Any]]) -> None:
        self._muted = True
        try:
            set_options(widget, options)
        finally:
            self._muted = False

    def _fresh(self, editor: str, shown: Any) -> bool:
        """Is `shown` new to this editor? A look that changed something else leaves what the
        owner is typing or picking alone; another selection, or a new revision, loads afresh."""
        if self._loaded.get(editor) == shown:
            return False
        self._loaded[editor] = shown
        return True

    # ── acting: each returns what it did, in words ───────────────────────────────────────
    def _do(self, label: str, action: Callable[[], str]) -> None:
        with self._lock:
            try:
                said = action()
            except Exception as exc:  # the owner's refusal (HTTPProblem) or a bad choice, shown
                self.status.value = f"✗ {esc(label)}: {esc(getattr(exc, 'message', None) or exc)}"
                self._refresh_quietly()  # a refusal often means the list was stale: show what is now
                return
            self.refresh()
            self.status.value = f"✓ {esc(said)}"

    def _chosen_pending(self) -> dict:
        p = self._pending.get(self.fields["pending"].value)
        if p is None:
            raise ValueError("nothing is waiting")
        return p

    def _approve(self, narrow: bool = False) -> str:
        p = self._chosen_pending()
        done = self.owner.approve(p["request_id"], self.narrow.rows if narrow else None)
        how = " as narrowed" if done.get("status") == "resolved" else ""
        return f"Approved {p['name']}'s {what(p)}{how}: {headlines(done.get('permissions') or [], self.topic_names)}"

    def _deny(self) -> str:
        p = self._chosen_pending()
        self.owner.deny(p["request_id"])
        return f"Denied {p['name']}'s {what(p)}"

    def _refresh_quietly(self) -> None:
        try:
            self.refresh()
        except Exception:  # the sandbox is gone: the refusal already said what went wrong
            pass

    def _edits_note(self) -> str:
        """How long a queued edit waits here: the phone's own pass applies it ("the owner's devices
        are woken by a silent push, apply it to the sealed details and re-seal them")."""
        after = getattr(getattr(getattr(self.owner, "state", None), "phone", None), "auto_share_after", None)
        if after is None:
            return "the phone's own pass is off: a queued edit waits for you"
        return f"the phone applies a queued edit on its own about {after:g} s after it comes"

    def _chosen(self, field: str, held: dict[str, dict], what: str) -> dict:
        chosen = held.get(self.fields[field].value)
        if chosen is None:
            raise ValueError(f"no {what} is waiting")
        return chosen

    def _allow_unlock(self) -> str:
        u = self._chosen("unlock", self._unlocks, "unlock")
        self.owner.approve_unlock(u["id"])
        if u.get("datatypes") == ["passkey"]:
            return f"Allowed {u.get('connection')} to sign in to {u.get('account') or 'the account'} once"
        return f"Allowed {u.get('connection')} to read {u.get('account') or 'the account'}: sealed to its key"

    def _deny_unlock(self) -> str:
        u = self._chosen("unlock", self._unlocks, "unlock")
        self.owner.deny_unlock(u["id"])
        return f"Did not allow {u.get('connection')} to read {u.get('account') or 'the account'}"

    def _apply_edit(self) -> str:
        e = self._chosen("decoy-edit", self._edits, "address edit")
        try:
            done = self.owner.apply_edit(e["id"])
        except Exception as exc:
            if resolved_as(exc) != "applied":
                raise
            # The phone's own pass applied it between the look and the click: the owner's wish stands.
            return f"The phone had already applied {e.get('connection')}'s edit of {e.get('email')} on its own"
        if done["status"] != "applied":
            return (
                f"The phone could not apply {e.get('connection')}'s edit: {done.get('reject_reason') or done['status']}"
            )
        return f"Applied {e.get('connection')}'s edit of {e.get('email')} (revision {done.get('applied_rev')})"

    def _reject_edit(self) -> str:
        e = self._chosen("decoy-edit", self._edits, "address edit")
        reason = self.fields["reject-reason"].value
        try:
            self.owner.reject_edit(e["id"], reason)
        except Exception as exc:
            if resolved_as(exc) != "applied":
                raise
            raise ValueError(
                f"too late: the phone had already applied {e.get('connection')}'s edit of {e.get('email')} on its own"
            ) from exc
        return f"Rejected {e.get('connection')}'s edit of {e.get('email')} ({reason})"

    def _memory(self) -> dict:
        m = self.selected_memory()
        if m is None:
            raise ValueError("no memory is selected")
        return m

    def _edit(self) -> str:
        m = self._memory()
        done = self.owner.edit(m["id"], text=self.fields["text"].value)
        return f"Saved “{short(self.fields['text'].value, 50)}” (revision {done['rev']})"

    def _refile(self) -> str:
        m, topic = self._memory(), self.fields["topic"].value
        done = self.owner.refile(m["id"], topic)
        where = self.topic_names.get(topic, "You") if topic else "You"
        key = "; its key was rotated, so it is shared again with whoever its labels reach" if done["rotated"] else ""
        return f"Filed “{short(m.get('text'), 50)}” under {where}{key}"

    def _delete(self) -> str:
        m = self._memory()
        self.owner.delete([m["id"]])
        return f"Deleted “{short(m.get('text') or m['id'][:8], 50)}” for every connection"

    def _rename(self) -> str:
        tid, new = self.fields["topic-pick"].value, self.fields["name"].value
        if not tid:
            raise ValueError("no topic is selected")
        old = self.topic_names.get(tid, "")
        done = self.owner.rename_topic(tid, new)
        return f"Renamed the topic “{old}” to “{new}” ({plural(len(done['changed']), 'row')} re-sealed)"

    def _conn(self) -> dict:
        c = self._conns.get(self.fields["connection"].value)
        if c is None:
            raise ValueError("no connection is selected")
        return c

    def _set_grant(self) -> str:
        c, pid, rows = self._conn(), self.fields["grant"].value, self.grant_picker.rows
        self.owner.set_grant(c["token_id"], pid, rows)
        return f"{c['name']}'s grant is now: {headlines(rows, self.topic_names)} (from its next read)"

    def _give(self) -> str:
        c, rows = self._conn(), self.grant_picker.rows
        self.owner.widen(c["token_id"], rows)
        return f"Gave {c['name']} a new grant: {headlines(rows, self.topic_names)}"

    def _revoke_grant(self) -> str:
        c, pid = self._conn(), self.fields["grant"].value
        words = headlines(self._grants[pid]["rows"], self.topic_names) if pid in self._grants else "a grant"
        self.owner.revoke(c["token_id"], pid)
        return f"Revoked {c['name']}'s grant: {words}"

    def _revoke(self) -> str:
        c = self._conn()
        self.owner.revoke(c["token_id"])
        return f"Revoked {c['name']}: its tokens answer 401 from now on"

    def _share(self) -> str:
        return shared(self.owner.share(), {t: c["name"] for t, c in self._conns.items()})

    def _on_key(self, change: dict) -> None:
        self._do("Key setup", lambda: self._key_setup(bool(change["new"])))

    def _key_setup(self, done: bool) -> str:
        self.owner.set_key_setup(done)
        if done:
            return "Key setup finished: the owner's public key is served, agents can save"
        return "Key setup put back: no owner key is served, so agents cannot save"

    def close(self) -> None:
        self._stop.set()
        super().close()
