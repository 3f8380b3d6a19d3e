"""Who can read what: the matrix computed from selectors equals what the server serves.

"`via` records the access reason: `self`, `all`, `category:<c>`, `topic:<id>`, `account:<id>` …";
"Labels (its categories, its topic, an account) decide which connections reach a memory"."""

from __future__ import annotations

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox
from decoy_lab.views import reach_matrix

from support.connections import paired


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def connect(sb, name, permissions) -> Connection:
    return paired(sb, permissions, name=name)


def test_the_matrix_for_category_topic_and_full_grants_equals_what_the_server_serves(sb):
    writer = connect(sb, "writer", ["memory.save"])
    trip = writer.save("Window seats.", categories=["travel"])
    meal = writer.save("No coriander.", categories=["food"])
    golf = writer.save("Leather headcovers.", topic="Golf", categories=["sports"])
    topic_id = next(t.id for t in writer.session.topics() if t.name == "Golf")
    readers = {
        "travel": connect(sb, "travel", [{"permissions": ["memory.read"], "datatypes": ["travel"]}]),
        "golf": connect(sb, "golf", [{"permissions": ["memory.read"], "about": [topic_id]}]),
        "everything": connect(sb, "everything", ["memory.read"]),
    }
    sb.owner.share()
    m = reach_matrix.from_connections({"writer": writer, **readers}, owner_rows=sb.owner.rows(), owner_key=sb.owner.key)
    assert m.agrees, m.differences.to_dict("records")
    assert m.expected.loc[trip, "travel"] == ["category:travel"]
    assert m.expected.loc[meal, "travel"] == [] and m.frame.loc[meal, "travel"] == "— no grant on category:food"
    assert m.expected.loc[golf, "golf"] == [topic_id]
    assert m.expected.loc[golf, "everything"] == ["all"]
    assert m.expected.loc[golf, "writer"] == ["self"]
    assert set(m.frame.index) >= {trip, meal, golf, topic_id.removeprefix("topic:")}


def test_a_difference_from_what_is_served_is_flagged(sb):
    """A grant the phone has not shared under yet: the labels give a reason, the server serves none."""
    writer = connect(sb, "writer2", ["memory.save"])
    mid = writer.save("Aisle seats.", categories=["music"])
    late = connect(sb, "late", [{"permissions": ["memory.read"], "datatypes": ["music"]}])
    m = reach_matrix.from_connections({"late": late}, owner_rows=sb.owner.rows(), owner_key=sb.owner.key)
    flagged = m.differences[m.differences["id"] == mid].to_dict("records")
    assert flagged == [
        {"id": mid, "title": "Aisle seats.", "connection": "late", "expected": ["category:music"], "served": None}
    ]
    assert m.frame.loc[mid, "late"].endswith("≠ served: not served")
    sb.owner.share()
    again = reach_matrix.from_connections({"late": late}, owner_rows=sb.owner.rows(), owner_key=sb.owner.key)
    assert mid not in set(again.differences["id"])


def test_the_cells_name_the_topic_and_the_account_a_reason_refers_to(sb):
    """The matrix says `topic:<id>` and `account:<id>` as `via` does, followed by the name: the
    topic's from its row, the account's "from the authorized account list"; the reasons in
    `expected` / `served` stay exactly as served."""
    netflix = sb.owner.add_account("Netflix")["id"]
    writer = connect(sb, "writer3", ["memory.save"])
    golf = writer.save("Plays on Saturdays.", topic="Golf club", categories=["sports"])
    topic_id = next(t.id for t in writer.session.topics() if t.name == "Golf club")
    plan = writer.save("Shares the family plan.", account=netflix)
    readers = {
        "golf": connect(sb, "golf3", [{"permissions": ["memory.read"], "about": [topic_id]}]),
        "netflix": connect(sb, "netflix3", [{"permissions": ["account.read", "acctmem.read"], "account_id": netflix}]),
    }
    sb.owner.share()
    m = reach_matrix.from_connections(readers, owner_rows=sb.owner.rows(), owner_key=sb.owner.key)
    assert m.agrees, m.differences.to_dict("records")
    assert m.frame.loc[golf, "golf"] == f"{topic_id} (Golf club)"
    assert m.expected.loc[golf, "golf"] == [topic_id]
    assert m.frame.loc[plan, "netflix"] == f"account:{netflix} (Netflix)"
    assert m.frame.loc[plan, "golf"] == f"— no grant on account:{netflix} (Netflix)"


def test_a_reason_whose_name_is_not_known_stays_as_it_is():
    names = {"topic:t1": "Golf", "account:a1": ""}
    assert reach_matrix.named("and:topic:t1+account:a1", names) == "and:topic:t1 (Golf)+account:a1"
    assert reach_matrix.named("category:food", names) == "category:food"
