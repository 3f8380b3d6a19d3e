"""The owner's phone keeps what it opened and what its last pass left: a sharing pass opens none of
the rows unchanged since (an RSA unwrap and an AES open per row made every pass, five seconds after
any write, cost as much as the first one: 3.4 s for 11,000 rows), looks again at every row a write
touched, and at every row once the live connections change; what it reports stays whole."""

from __future__ import annotations

from decoy_lab import memory
from decoy_lab.recipes import sealing

from support.sandbox_kit import saved, sealed_row

MEMORIES = "/api/agent/context/memories"


def opened_rows(monkeypatch) -> list:
    """The row ids the owner's app opens from now on (every open goes through open_json)."""
    seen: list = []
    real = sealing.open_json

    def spy(*args, **kw):
        seen.append(kw.get("row_id"))
        return real(*args, **kw)

    monkeypatch.setattr(sealing, "open_json", spy)
    return seen


def test_a_pass_opens_only_the_rows_changed_since_the_last(lab, alpha, monkeypatch):
    rows = [saved(alpha, f"Note {i}.", categories=["travel"]) for i in range(3)]
    assert lab.share().opened == 3
    opened = opened_rows(monkeypatch)
    report = lab.share()
    assert opened == [] and report.opened == 3 and report.rows == 3

    body = memory.edit_memory_row(
        alpha.served(rows[0]["id"]), {"categories": ["travel", "food"]}, alpha.key, alpha.keys()
    )
    assert alpha.put(MEMORIES, body).status_code == 200
    foodie = lab.pair("foodie", {"permissions": ["memory.read"], "datatypes": ["food"]})
    opened.clear()  # the write's own checks may open it; the pass must once more
    report = lab.share()
    assert opened == [rows[0]["id"]] and report.opened == 3
    assert foodie.served(rows[0]["id"])["via"] == ["category:food"]  # the new labels, not the kept ones
    assert all(foodie.served(r["id"]) is None for r in rows[1:])


def test_a_deleted_row_is_not_kept(lab, alpha):
    rows = [saved(alpha, f"Note {i}.") for i in range(2)]
    lab.share()
    assert alpha.post(f"{MEMORIES}/delete", {"ids": [rows[0]["id"]]}).status_code == 200
    report = lab.share()
    assert report.rows == 1
    assert list(lab.state.phone.opened) == [rows[1]["id"]]


def test_an_untouched_row_the_app_cannot_open_is_still_reported(lab, alpha):
    keys = alpha.keys(grantees=False)
    bad = sealed_row(keys, {"v": 2, "row_id": "another id", "observation": {"entityName": "u", "content": "x"}})
    assert alpha.save([bad]).status_code == 201
    good = saved(alpha)
    assert [u.problem for u in lab.share().unreadable] == ["binding"]
    saved(alpha, "Another one.")  # a write elsewhere: the next pass looks at that row only
    report = lab.share()
    assert [u.id for u in report.unreadable] == [bad["id"]] and report.opened == 2 and report.rows == 3
    assert alpha.served(good["id"]) is not None


def test_a_wrap_removed_behind_its_back_is_made_again(lab, alpha):
    reader = lab.pair("reader", {"permissions": ["memory.read"]})
    row = saved(alpha)
    lab.share()
    assert reader.served(row["id"])["via"] == ["all"]
    with lab.state.store.tx() as con:  # as a fault test or a restored file would
        con.execute("DELETE FROM memory_wraps WHERE memory_id = ? AND token_id = ?", (row["id"], reader.token_id))
    assert reader.served(row["id"]) is None
    assert lab.share().shared == 1
    assert reader.served(row["id"])["via"] == ["all"]


def test_a_new_grant_has_every_row_looked_at_again(lab, alpha):
    rows = [saved(alpha, f"Note {i}.", categories=["food"]) for i in range(2)]
    lab.share()
    foodie = lab.pair("foodie", {"permissions": ["memory.read"], "datatypes": ["food"]})
    assert lab.share().shared == 2  # nothing was written to the rows: the new connection decides
    assert [foodie.served(r["id"])["via"] for r in rows] == [["category:food"]] * 2
