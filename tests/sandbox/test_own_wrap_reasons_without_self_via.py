"""The reasons the saver's own wrap is kept for when a row comes without `self_via`, over HTTP:
what the saver reads the row by afterwards (`via` on its own listing).

Spec 001, POST memories, `self_via`: "Saving gives no access: its own wrap is kept for these
only, and with none it keeps no wrap. A row sent without `self_via` keeps it for the reasons the
server can see that the saver holds: every memory, the row's own topic, and the reasons on its
admitted grantee wraps."
"""

from __future__ import annotations

import uuid

from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire

from support.sandbox_kit import sealed_row

PLAIN = {"observation": {"content": "Lisbon: Fridays only."}}


def hand_built(peer, *grantees, row_id: str | None = None) -> dict:
    """A row sealed by hand, without `self_via`; `grantees` are (peer, via) pairs given a wrap."""
    k = bytes(range(32))
    row = sealed_row(peer.keys(grantees=False), PLAIN, row_id=row_id, key_bytes=k)
    if grantees:
        row["grantee_wraps"] = [
            {
                "token_id": g.token_id,
                "via": via,
                "wrapped_key": wire.b64encode(sealing.wrap_to_agent(k, g.key.public_key_b64)),
            }
            for g, via in grantees
        ]
    assert peer.save([row]).status_code == 201
    return row


def test_every_memory_is_a_reason_the_server_sees(lab):
    """ "every memory": a saver that reads all memories keeps `all` beside `self`."""
    saver = lab.pair("saver", "memory.save", "memory.read")
    row = hand_built(saver)
    assert saver.served(row["id"])["via"] == ["self", "all"]


def test_only_self_when_the_saver_reads_nothing_else(lab):
    saver = lab.pair("saver", "memory.save", {"permissions": ["memory.read"], "datatypes": ["food"]})
    row = hand_built(saver)
    assert saver.served(row["id"])["via"] == ["self"]


def test_the_rows_own_topic_under_a_grant_naming_it(lab):
    """ "the row's own topic": a row whose id is a topic the saver reads by is that topic's own row."""
    topic_row = str(uuid.uuid4())
    saver = lab.pair("saver", "memory.save", {"permissions": ["memory.read"], "about": [f"topic:{topic_row}"]})
    own = hand_built(saver, row_id=topic_row)
    other = hand_built(saver)
    assert saver.served(own["id"])["via"] == ["self", f"topic:{topic_row}"]
    assert saver.served(other["id"])["via"] == ["self"]


def test_the_reasons_on_its_admitted_grantee_wraps_that_it_holds(lab):
    """ "the reasons on its admitted grantee wraps": only those the saver itself reads by, and
    never `self` (a grantee's wrap is never kept for `self`)."""
    saver = lab.pair("saver", "memory.save", {"permissions": ["memory.read"], "datatypes": ["food"]})
    foodie = lab.pair("foodie", {"permissions": ["memory.read"], "datatypes": ["food", "travel"]})
    row = hand_built(saver, (foodie, ["self", "category:travel", "category:food"]))
    assert saver.served(row["id"])["via"] == ["self", "category:food"]
    assert foodie.served(row["id"])["via"] == ["category:travel", "category:food"]
    # travel was never the saver's: granted it later, its own wrap still does not record it
    lab.ask(saver, {"permissions": ["memory.read"], "datatypes": ["travel"]})
    assert saver.served(row["id"])["via"] == ["self", "category:food"]


def test_a_reason_held_twice_is_recorded_once(lab):
    """`all` is seen as every memory and again on a grantee's wrap: one reason, listed once."""
    saver = lab.pair("saver", "memory.save", "memory.read")
    reader = lab.pair("reader", "memory.read")
    row = hand_built(saver, (reader, ["all"]))
    assert saver.served(row["id"])["via"] == ["self", "all"]
    assert reader.served(row["id"])["via"] == ["all"]


def test_a_save_only_connection_is_owed_nothing_of_anothers(lab, alpha):
    """ "`memory.save` lets you save, and read and edit what you saved": another's memory is not
    this connection's to wait for — no `preparing` entry, no count of others'."""
    row = hand_built(alpha)
    beta = lab.pair("beta", "memory.save")
    listing = beta.memories()
    assert all(m["id"] != row["id"] for m in listing["memories"])
    assert row["id"] not in listing.get("preparing", [])
    assert not listing.get("preparing_others")
