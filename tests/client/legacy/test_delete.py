"""Deleting legacy space rows end to end, over real HTTP against the sandbox: `POST
/api/agent/context/rows/delete` for the rows this connection wrote, every other id refused with why,
`moving` waited out until the owner's phone has moved the row to its own key (then deleted as a
memory), and the same ids resent after a lost answer."""

from __future__ import annotations

import json
import uuid

import httpx

from decoy_lab.client.connection import Connection
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.phone import schedule
from decoy_lab.wire import layouts as wire

from support.legacy import connect, obs, write_legacy

ROWS = "/api/agent/context/rows"
DELETE = f"{ROWS}/delete"
MEMORIES_DELETE = "/api/agent/context/memories/delete"
EVERY = ["memory.read", "memory.delete"]
FOOD_ONLY = [{"permissions": ["memory.read", "memory.delete"], "datatypes": ["food"]}]


class Recorder:
    """Every POST the connection sends (path and body, byte for byte; an httpx request hook) and every
    answer it reads (around `Api.request`: a dropped answer never arrives)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, bytes]] = []
        self.answers: list[tuple[str, dict]] = []

    def __call__(self, request: httpx.Request) -> None:
        if request.method == "POST":
            self.posts.append((request.url.path, request.read()))

    def paths(self) -> list[str]:
        return [p for p, _ in self.posts]

    def clear(self) -> None:
        self.posts.clear()
        self.answers.clear()


def recorded(sb, clock, permissions, rec: Recorder, **kw) -> Connection:
    conn = connect(sb, clock, permissions, recorder=rec, **kw)
    send = conn.session.api.request

    def request(method: str, path: str, **kw):
        answer = send(method, path, **kw)
        if method == "POST":
            rec.answers.append((path, answer))
        return answer

    conn.session.api.request = request
    return conn


def add_rows(conn: Connection, space_id: str, key: bytes, plains: list[dict]) -> list[str]:
    """Rows this connection writes into a space whose key it was given."""
    ids = [str(uuid.uuid4()) for _ in plains]
    conn.session.api.request(
        "POST",
        ROWS,
        json={
            "space_id": space_id,
            "rows": [
                {
                    "id": rid,
                    "skid": wire.kid(key),
                    "ciphertext": wire.b64encode(sealing.seal_space_row(key, p, space_id=space_id, row_id=rid)),
                }
                for rid, p in zip(ids, plains)
            ],
        },
    )
    return ids


def in_space(conn: Connection, space_id: str) -> list[str]:
    return [r["id"] for r in conn.session.get(ROWS, {"space_id": space_id})["rows"]]


def owner_sees(sb, row_id: str) -> bool:
    return any(e["id"] == row_id for e in sb.owner.app_view())


def test_own_rows_are_deleted_with_memories_in_one_call(sb, clock):
    """rows/delete: "Deletes rows by id, in spaces you are still granted, that you hold `memory.delete` or
    `acctmem.delete` on"; GET rows: "`mine` is true for rows your token wrote — the only rows you may delete".
    Memory ids and legacy row ids go to their own routes from one `delete`."""
    rec = Recorder()
    conn = recorded(sb, clock, [*EVERY, "memory.save"], rec)
    space_id, _, [gone, kept] = write_legacy(conn, [obs("Likes espresso."), obs("Cycles to work.")])
    mid = conn.save("Prefers window seats.", categories=["travel"])
    conn.load()
    rec.clear()
    res = conn.delete([gone, mid])
    assert sorted(res.deleted) == sorted([gone, mid]) and res.refused == [] and res.why == {}
    assert sorted(rec.paths()) == sorted([DELETE, MEMORIES_DELETE])
    assert json.loads(dict(rec.posts)[DELETE]) == {"ids": [gone]}
    assert in_space(conn, space_id) == [kept]
    assert not owner_sees(sb, gone) and not owner_sees(sb, mid) and owner_sees(sb, kept)
    conn.close()


def test_another_connections_row_is_refused_and_says_why(sb, clock):
    """GET rows: "`mine` is true for rows your token wrote — the only rows you may delete"; rows/delete:
    "everything else comes back in `refused`" — even to a connection holding `memory.delete` on every memory."""
    writer = connect(sb, clock, EVERY)
    space_id, key, [theirs] = write_legacy(writer, [obs("Likes espresso.")])
    other = connect(sb, clock, EVERY)
    [mine] = add_rows(other, space_id, key, [obs("Cycles to work.")])
    other.load()
    res = other.delete([theirs, mine])
    assert res.deleted == [mine] and res.refused == [theirs]
    assert "written by another connection" in res.why[theirs] and res.remediation == {}
    assert in_space(writer, space_id) == [theirs], "nothing else was deleted"
    writer.close()
    other.close()


def test_own_row_without_the_permission_is_refused_with_the_grant_that_unlocks_it(sb, clock):
    """rows/delete deletes rows "that you hold `memory.delete` or `acctmem.delete` on … everything else comes
    back in `refused`": the writer's own row too, and `remediation` names the grant request to send."""
    conn = connect(sb, clock, ["memory.read"])
    space_id, _, [rid] = write_legacy(conn, [obs("Likes espresso.")])
    conn.load()
    res = conn.delete(rid)
    assert res.deleted == [] and res.refused == [rid]
    assert res.remediation == {rid: {"permissions": ["memory.delete"]}}
    assert "does not hold memory.delete" in res.why[rid] and "/api/agent/grant-request" in res.why[rid]
    assert in_space(conn, space_id) == [rid]
    conn.close()


def test_moving_waits_for_the_phone_then_deletes_the_moved_memory(sb, clock):
    """rows/delete: "everything else comes back … in `moving` (with `retry_after_seconds`) while the owner's
    phone moves a row to its own key"; the rows description: "the retry is decided by the per-memory rule" —
    the moved row is deleted through `POST /api/agent/context/memories/delete`."""
    sleeps: list[float] = []
    rec = Recorder()
    conn = recorded(sb, clock, FOOD_ONLY, rec, sleeps=sleeps)
    _space_id, _, [rid, other] = write_legacy(conn, [obs("Likes espresso."), obs("Cycles to work.", ["sports"])])
    conn.load()
    rec.clear()
    res = conn.delete([rid])
    assert res.deleted == [rid] and res.refused == []
    assert rec.paths() == [DELETE, MEMORIES_DELETE] and sleeps == [5], "one rows/delete, the wait, then the memory"
    assert dict(rec.answers)[DELETE]["moving"] == [rid]
    assert sb.state.phone.last_moves.moved == [rid], "the owner's phone moved it"
    v = conn.load()
    assert v.served_row(rid) is None and [r.id for r in v.space_rows] == [other]
    assert not owner_sees(sb, rid) and owner_sees(sb, other)
    conn.close()


def test_moving_is_bounded_when_the_phone_never_answers(sb, clock):
    """ "Nothing is changed meanwhile": with the owner's phone off, `delete` waits `retries` times, then reports
    the row refused, saying it is still moving, and the row is where it was."""
    schedule.configure(sb.state, auto_share_after=None)
    sleeps: list[float] = []
    conn = connect(sb, clock, FOOD_ONLY, sleeps=sleeps, retries=2)
    space_id, _, [rid] = write_legacy(conn, [obs("Likes espresso.")])
    conn.load()
    res = conn.delete([rid])
    assert res.deleted == [] and res.refused == [rid] and "still moving" in res.why[rid]
    assert sleeps == [5, 5] and in_space(conn, space_id) == [rid]
    conn.close()


def test_a_lost_answer_resends_the_same_ids_and_counts_already_gone_as_deleted(sb, clock):
    """ "If the outcome is unknown (a timeout, a dropped connection, a 5xx), POST the same sealed rows again":
    the delete that committed and lost its answer is resent byte for byte; the resend finds the rows already
    gone (`refused`), and they count as deleted — nothing is deleted twice and nothing else is lost."""
    rec = Recorder()
    conn = recorded(sb, clock, EVERY, rec)
    space_id, _, [a, b, kept] = write_legacy(
        conn, [obs("Likes espresso."), obs("Cycles to work."), obs("Reads before bed.")]
    )
    conn.load()
    rec.clear()
    conn.session.sleep = lambda s: sb.state.faults.configure({})  # the backoff before the resend: the network heals
    sb.state.faults.configure({"drop_after_commit": 1.0, "seed": 1})
    res = conn.delete([a, b])
    assert conn.resends == 1
    assert [p for p, _ in rec.posts] == [DELETE, DELETE] and rec.posts[0] == rec.posts[1], "the same request"
    assert rec.answers == [(DELETE, {"deleted": [], "refused": [a, b]})], "the first answer was lost"
    assert sorted(res.deleted) == sorted([a, b]) and res.refused == []
    assert in_space(conn, space_id) == [kept] and owner_sees(sb, kept)
    conn.close()


def test_the_decoy_lab_delete_command_deletes_a_legacy_row(sb, clock, tmp_path, monkeypatch, capsys):
    """`decoy-lab delete` goes through the same delete: its own row is deleted, another connection's refused
    with why (exit 1)."""
    from decoy_lab.store.profiles import ENV_DIR, ENV_KEYRING
    from decoy_lab.workbench.shell.cli import main

    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    monkeypatch.setenv(ENV_KEYRING, "0")
    writer = connect(sb, clock, EVERY)
    space_id, key, [theirs] = write_legacy(writer, [obs("Likes espresso.")])
    conn = connect(sb, clock, EVERY, profile="default")
    [mine] = add_rows(conn, space_id, key, [obs("Cycles to work.")])
    capsys.readouterr()
    assert main(["delete", mine, theirs]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"deleted  {mine}"
    assert out[1].startswith(f"refused  {theirs}  (written by another connection")
    assert in_space(writer, space_id) == [theirs]
    writer.close()
    conn.close()
