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
