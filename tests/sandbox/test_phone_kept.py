"""The owner's phone keeps what it opened: a sharing pass over rows unchanged since the last one
opens none of them again (an RSA unwrap and an AES open per row made every pass, five seconds
after any write, cost as much as the first one), and a row changed since is opened again, so its
new labels decide sharing."""

from __future__ import annotations

from decoy_lab import memory
from decoy_lab.recipes import sealing

from support.sandbox_kit import saved

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
    assert [ref[1] for ref in lab.state.phone.opened] == [rows[1]["id"]]
