"""The owner's phone panel: each button does what the Decoy app does, through the sandbox's Owner."""

from __future__ import annotations

import html
import time
from typing import Any

from decoy_lab import memory
from decoy_lab.views import reach_matrix
from decoy_lab.widgets import OwnerPanel, ReachMatrixView

from support.sandbox_kit import Lab, saved


def test_pending_pairing_is_approved_narrowed_from_the_panel():
    lab = Lab()
    lab.state.approve = "manual"
    body = {"client_id": "bot", "name": "Bot", "authorization_details": [{"permissions": ["memory.read"]}]}
    lab.client.post("/oauth/device", json=body)
    panel = OwnerPanel(lab.owner, follow=0)
    assert panel.fields["pending"].label == "Bot asks to pair"
    picker = panel.fields["narrow"]
    assert picker.permissions.value == ("memory.read",) and picker.reach.value == "all", "the ask, loaded"
    picker.reach.value, picker.categories.value = "datatypes", ("travel",)
    panel.buttons["approve-narrowed"].click()
    assert said(panel) == "✓ Approved Bot's pairing as narrowed: Read memories in travel"
    assert lab.owner.pending() == [] and panel.waiting_body.layout.display == "none"
    (conn,) = lab.owner.connections()
    assert conn["permissions"] == [{"permissions": ["memory.read"], "datatypes": ["travel"]}]
    assert panel.fields["connection"].label == "Bot", "the new connection is listed by its name"


def test_edit_refile_rename_narrow_and_the_key_switch_from_the_panel():
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save", "memory.read", "memory.edit")
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel", "food"]})
    made = memory.new_topic_rows(alpha.keys(), "Lisbon")
    assert alpha.save(made.rows).status_code == 201
    row = saved(alpha, "Fridays only.", categories=["travel"])
    lab.share()
    panel = OwnerPanel(lab.owner, follow=0)
    tree = _widgets(panel)
    panel.fields["memory"].value = row["id"]
    panel.fields["text"].value = "Fridays and Saturdays."
    panel.buttons["edit"].click()
    assert lab.view(row["id"])["text"] == "Fridays and Saturdays." and lab.stored(row["id"]).rev == 2
    assert said(panel) == "✓ Saved “Fridays and Saturdays.” (revision 2)"
    panel.fields["topic"].value = made.topic_id
    panel.buttons["refile"].click()
    assert lab.view(row["id"])["topic"] == {"id": made.topic_id, "name": "Lisbon"}
    assert said(panel).startswith("✓ Filed “Fridays and Saturdays.” under Lisbon")
    panel.fields["topic-pick"].value = made.topic_id
    assert panel.fields["name"].value == "Lisbon", "picking a topic loads its name to edit"
    panel.fields["name"].value = "Lisbon trip"
    panel.buttons["rename"].click()
    assert lab.view(row["id"])["topic"]["name"] == "Lisbon trip"
    assert said(panel).startswith("✓ Renamed the topic “Lisbon” to “Lisbon trip” (")
    assert "Lisbon trip" in panel.fields["memory"].label, "the selected memory shows its topic's new name"
    panel.fields["connection"].value = reader.token_id
    (grant,) = [g for g in lab.owner.grants_of(reader.token_id) if g["rows"][0].get("datatypes")]
    panel.fields["grant"].value = grant["policy_id"]
    assert panel.grant_picker.categories.value == ("food", "travel")
    panel.grant_picker.categories.value = ("food",)
    panel.buttons["set-grant"].click()
    assert said(panel) == "✓ reader's grant is now: Read memories in food (from its next read)"
    assert reader.served(row["id"]) is None, "narrowed off travel: the next read hides it"
    panel.key_switch.value = False
    assert alpha.grantees()["owner_public_key"] is None and "✓ Key setup put back" in said(panel)
    assert panel.key_switch.description == "Key setup pending"
    panel.key_switch.value = True
    assert alpha.grantees()["owner_public_key"] is not None
    assert _widgets(panel) == tree, "every action changed values in place: not one widget was made or dropped"


def test_a_refusal_is_shown_and_the_panel_stays_usable():
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save")
    row = saved(alpha)
    panel = OwnerPanel(lab.owner, follow=0)
    panel.fields["name"].value = "x"
    panel.buttons["rename"].click()
    assert said(panel) == "✗ Rename: no topic is selected"
    panel.fields["memory"].value = row["id"]
    panel.buttons["delete"].click()
    assert lab.stored(row["id"]) is None and panel.memory_title.value.endswith("(0)")
    assert said(panel).startswith("✓ Deleted “")


def test_memories_come_ten_to_a_page():
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save")
    for i in range(23):
        saved(alpha, f"Memory number {i}.")
    panel = OwnerPanel(lab.owner, follow=0)
    assert len(panel.fields["memory"].options) == 10 and "page 1 of 3" in panel.page_label.value
    assert panel.buttons["prev"].disabled and not panel.buttons["next"].disabled
    panel.buttons["next"].click()
    panel.buttons["next"].click()
    assert len(panel.fields["memory"].options) == 3 and panel.buttons["next"].disabled


def test_a_grant_about_a_topic_is_named_by_the_topic_and_a_request_by_its_reason():
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save", "memory.read")
    made = memory.new_topic_rows(alpha.keys(), "Lisbon")
    assert alpha.save(made.rows).status_code == 201
    reader = lab.pair("reader", {"permissions": ["memory.read"], "about": [made.topic_id]})
    lab.state.approve = "manual"
    ask = {"permissions": ["memory.read"], "datatypes": ["food"], "reason": "Suggest dinners"}
    assert reader.post("/api/agent/grant-request", ask).status_code == 201
    panel = OwnerPanel(lab.owner, follow=0)
    assert panel.fields["pending"].label == "reader asks for more access"
    assert "“Suggest dinners”" in html.unescape(panel.pending_info.value)
    panel.fields["connection"].value = reader.token_id
    assert panel.fields["grant"].label == "Read memories about this topic (Lisbon)"
    assert panel.grant_picker.reach.value == "about" and panel.grant_picker.topic.value == made.topic_id


def test_a_look_leaves_what_the_owner_is_typing_alone():
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save")
    row = saved(alpha, "Aisle seats.")
    panel = OwnerPanel(lab.owner, follow=0)
    panel.fields["memory"].value = row["id"]
    panel.fields["text"].value = "Aisle seats, half typ"
    saved(alpha, "Another memory.")  # an agent saves meanwhile, and the panel looks
    panel.refresh()
    assert panel.memory_title.value.endswith("(2)") and panel.fields["text"].value == "Aisle seats, half typ"
    lab.owner.edit(row["id"], text="Window seats.")  # the memory itself changed: it loads afresh
    panel.refresh()
    assert panel.fields["text"].value == "Window seats."


def test_share_now_runs_the_phones_sharing_pass_and_names_who_got_what():
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save")
    saved(alpha, "Fridays only.", categories=["travel"])
    lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel"]})  # after the save: not shared yet
    panel = OwnerPanel(lab.owner, follow=0)
    panel.buttons["share"].click()
    assert said(panel) == "✓ Shared: 1 new key wrap (reader 1)"
    panel.buttons["share"].click()
    assert said(panel) == "✓ Shared: 0 new key wraps", "nothing new to share the second time"


def test_a_new_pairing_shows_by_itself():
    """The panel looks at the owner on its own: a third pairing appears with no click."""
    lab = Lab()
    lab.state.approve = "manual"
    panel = OwnerPanel(lab.owner, follow=0.05)
    try:
        body = {"client_id": "late", "name": "Late bot", "authorization_details": [{"permissions": ["memory.read"]}]}
        lab.client.post("/oauth/device", json=body)
        deadline = time.monotonic() + 5
        while panel.fields["pending"].label != "Late bot asks to pair" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert panel.fields["pending"].label == "Late bot asks to pair"
        assert panel.waiting_title.value.endswith("(1)")
    finally:
        panel.close()


def said(panel: OwnerPanel) -> str:
    """The status line as the owner reads it."""
    return html.unescape(panel.status.value)


def _widgets(root: Any) -> set[str]:
    """The model ids of every widget under `root` (children, and a picker's parts)."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        w = todo.pop()
        if w.model_id in seen:
            continue
        seen.add(w.model_id)
        todo.extend(getattr(w, "children", ()))
    return seen


def test_the_matrix_view_marks_a_cell_that_differs():
    frame = reach_matrix.build(
        [reach_matrix.Reader("late", {"categories": ["music"]})],
        [
            reach_matrix.Labelled(
                "r1",
                "Aisle seats.",
                memory.decode_plaintext(
                    {
                        "v": 2,
                        "row_id": "r1",
                        "observation": {"entityName": "default_user", "content": "Aisle seats."},
                        "about": ["user"],
                        "categories": ["music"],
                    },
                    "r1",
                ),
            )
        ],
    )
    view = ReachMatrixView(frame)
    assert "background:#fdd" in view.children[0].value and "1 cell(s) differ" in view.children[1].value


def test_the_may_list_says_what_the_grant_would_grant_after_every_change():
    """Issue: after narrowing a grant to a category, the panel's "may" list still said "Read all
    memories" while its confirmation said "Read memories in travel". The list is worded for what
    is picked to reach, and follows each pick, a Set, another connection and a topic's rename."""
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save", "memory.read")
    made = memory.new_topic_rows(alpha.keys(), "Lisbon")
    assert alpha.save(made.rows).status_code == 201
    reader = lab.pair("reader", {"permissions": ["memory.read", "memory.edit"]})
    panel = OwnerPanel(lab.owner, follow=0)
    picker = panel.grant_picker

    def may() -> dict[str, str]:
        return {value: label for label, value in picker.permissions.options}

    panel.fields["connection"].value = reader.token_id
    assert may()["memory.read"] == "Read all memories" and may()["memory.edit"] == "Edit all memories"
    picker.reach.value, picker.categories.value = "datatypes", ("travel",)
    assert may()["memory.read"] == "Read memories in travel", "the pick is said before it is set"
    assert may()["memory.save"] == "Save new memories"  # it takes no selection
    panel.buttons["set-grant"].click()
    assert (
        said(panel) == "✓ reader's grant is now: Read memories in travel; Edit memories in travel (from its next read)"
    )
    assert may()["memory.read"] == "Read memories in travel" and picker.permissions.value == (
        "memory.read",
        "memory.edit",
    )
    assert panel.fields["grant"].label == "Read memories in travel; Edit memories in travel"
    picker.categories.value = ("travel", "food")
    assert may()["memory.edit"] == "Edit memories in travel, food"
    picker.reach.value, picker.topic.value = "about", made.topic_id
    assert may()["memory.read"] == "Read memories about Lisbon"
    panel.fields["topic-pick"].value, panel.fields["name"].value = made.topic_id, "Lisbon trip"
    panel.buttons["rename"].click()
    panel.fields["connection"].value = alpha.token_id  # another connection: its own grant, in its words
    assert may()["memory.read"] == "Read all memories"
    panel.fields["connection"].value = reader.token_id
    assert may()["memory.read"] == "Read memories in travel", "back to the grant as set"
    picker.reach.value, picker.topic.value = "about", made.topic_id
    assert may()["memory.read"] == "Read memories about Lisbon trip", "the renamed topic, by its new name"


def test_the_owners_sharing_pass_shows_as_words():
    """Issue: notebook 04's first cell printed `<ShareReport 84 rows, 84 opened, 81 new wraps, …>`.
    The report shows as a headline its lines bear out, connections by name, in text and HTML."""
    lab = Lab()
    alpha = lab.pair("Trip planner", "memory.save")
    saved(alpha, "Fridays only.", categories=["travel"])
    lab.pair("Food guide", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    report = lab.share()
    assert (
        report.to_text()
        == "The owner's phone looked at 1 row (all opened): 1 new key wrap.\n  Food guide: 1 new key wrap"
    )
    shown = _pretty(report)
    assert shown == report.to_text() and "<ShareReport" not in shown
    page = report._repr_html_()
    assert "<b>The owner&#x27;s phone looked at 1 row (all opened): 1 new key wrap.</b>" in page
    assert "<li>Food guide: 1 new key wrap</li>" in page
    again = lab.share()
    assert again.to_text().splitlines() == [
        "The owner's phone looked at 1 row (all opened): 0 new key wraps.",
        "  every connection already held the keys its grants reach",
    ]


def _pretty(obj: Any) -> str:
    """What IPython shows as the text of `obj` (its text/plain)."""
    from IPython.lib.pretty import pretty

    return pretty(obj)


def _labelled(rid: str, text: str, categories: list[str]) -> reach_matrix.Labelled:
    plain = {
        "v": 2,
        "row_id": rid,
        "observation": {"entityName": "default_user", "content": text},
        "about": ["user"],
        "categories": categories,
    }
    return reach_matrix.Labelled(rid, text, memory.decode_plaintext(plain, rid))


def test_the_matrix_shows_the_rows_a_reason_singles_out_and_the_rest_one_click_away():
    """Issue: the matrix listed ~90 rows of "— no grant on topic:…". It shows by default the rows
    a reason singles out (a category, a topic, a connection's own row, a difference from what the
    server serves), says what the others have in common, and shows all of them on a click."""
    rows = [_labelled(f"r{i}", f"Memory {i}.", ["music" if i < 2 else "travel"]) for i in range(12)]
    everything = {r.id: ["all"] for r in rows}
    planner = reach_matrix.Reader("trip planner", {"all": True}, served=everything, mine={"r5"})
    planner.served["r5"] = ["self", "all"]
    food = reach_matrix.Reader("food guide", {"categories": ["music"]}, served={"r0": ["category:music"]})
    m = reach_matrix.build([planner, food], rows)
    assert list(m.shown().index) == ["r0", "r1", "r5"]  # music for the food guide; the planner's own
    assert "≠" in m.frame.loc["r1", "food guide"], "r1 is owed to the food guide and not served: a difference"
    said = "9 more rows are read alike, and no other grant reaches them: 9 only through a grant on all memories (trip planner)"
    assert m.left_out() == said
    view = ReachMatrixView(m)
    table = view.children[0]
    assert table.value.count("<tr>") == 1 + 3 and view.toggle.description == "Show all 12 rows"
    assert said in view.children[2].children[0].value
    view.toggle.click()
    assert table.value.count("<tr>") == 1 + 12 and view.toggle.description == "Show only the 3 rows with a reason"
    view.toggle.click()
    assert table.value.count("<tr>") == 1 + 3 and view.everything is False
    alone = reach_matrix.build(
        [
            reach_matrix.Reader(
                "food guide", {"categories": ["music"]}, served={"r0": ["category:music"], "r1": ["category:music"]}
            )
        ],
        rows,
    )
    assert alone.left_out() == "10 more rows are read alike, and no other grant reaches them: 10 by no connection"
    full = ReachMatrixView(reach_matrix.build([food], rows[:2]))
    assert full.toggle.layout.display == "none", "nothing left out: no button"
