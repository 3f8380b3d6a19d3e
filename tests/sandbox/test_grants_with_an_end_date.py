"""A grant the owner gave an end date reaches memories until that date and not after, over HTTP:
the saver is told to wrap for that grantee, the grantee reads what was wrapped for it, and once
the date has passed neither holds.

Spec 001: "After the user approves access, your agent uses it until the grant expires or they
revoke it"; "Access ends when the owner set it to (one end date per connection, chosen on
approval …). After it ends, calls answer `403 GRANT_EXPIRED` with `permission_request`."
"""

from __future__ import annotations

from support.sandbox_kit import saved

HOUR = 3600
TRAVEL = {"permissions": ["memory.read"], "datatypes": ["travel"]}


def test_a_grant_ending_later_reaches_memories_until_it_ends(lab, alpha):
    reader = lab.pair("reader", "memory.save")
    lab.owner.widen(reader.token_id, [TRAVEL], expires_in_hours=48)
    # the saver is told to wrap for it, by the reasons it holds
    [grantee] = alpha.grantees()["grantees"]
    assert grantee["token_id"] == reader.token_id and grantee["selectors"]["categories"] == ["travel"]
    row = saved(alpha, categories=["travel"])
    assert reader.served(row["id"])["via"] == ["category:travel"]
    assert reader.get("/api/agent/policies").json()["access"]["memories"]["read"]["categories"] == ["travel"]
    # past its end date nothing of it is held: not a grantee, nothing served, saving refused as ended
    lab.clock.advance(48 * HOUR)
    assert alpha.grantees()["grantees"] == []
    assert reader.served(row["id"]) is None
    r = reader.save([reader.new_row("late")])
    assert r.status_code == 403 and r.json()["code"] == "GRANT_EXPIRED"
