"""The owner's phone panel: each button does what the Decoy app does, through the sandbox's Owner."""

from __future__ import annotations

import json

from decoy_lab import memory
from decoy_lab.views import reach_matrix
from decoy_lab.widgets import OwnerPanel, ReachMatrixView

from support.sandbox_kit import Lab, saved


def test_pending_pairing_is_approved_narrowed_from_the_panel():
    lab = Lab()
    lab.state.approve = "manual"
    body = {"client_id": "bot", "name": "Bot", "authorization_details": [{"permissions": ["memory.read"]}]}
    lab.client.post("/oauth/device", json=body)
    panel = OwnerPanel(lab.owner)
    (ref,) = [k.split(":", 1)[1] for k in panel.buttons if k.startswith("approve:")]
    panel.fields[f"narrow:{ref}"].value = json.dumps([{"permissions": ["memory.read"], "datatypes": ["travel"]}])
    panel.buttons[f"approve:{ref}"].click()
    assert panel.status.value.startswith("✓ Approve") and "status &quot;resolved&quot;" in panel.status.value
    assert lab.owner.pending() == []
    (conn,) = lab.owner.connections()
    assert conn["permissions"] == [{"permissions": ["memory.read"], "datatypes": ["travel"]}]


def test_edit_refile_rename_narrow_and_the_key_switch_from_the_panel():
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save", "memory.read", "memory.edit")
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel", "food"]})
    made = memory.new_topic_rows(alpha.keys(), "Lisbon")
    assert alpha.save(made.rows).status_code == 201
    row = saved(alpha, "Fridays only.", categories=["travel"])
    lab.share()
    panel = OwnerPanel(lab.owner)
    panel.fields[f"text:{row['id']}"].value = "Fridays and Saturdays."
    panel.buttons[f"edit:{row['id']}"].click()
    assert lab.view(row["id"])["text"] == "Fridays and Saturdays." and lab.stored(row["id"]).rev == 2
    panel.fields[f"topic:{row['id']}"].value = made.topic_id
    panel.buttons[f"refile:{row['id']}"].click()
    assert lab.view(row["id"])["topic"] == {"id": made.topic_id, "name": "Lisbon"}
    panel.fields[f"name:{made.topic_id}"].value = "Lisbon trip"
    panel.buttons[f"rename:{made.topic_id}"].click()
    assert lab.view(row["id"])["topic"]["name"] == "Lisbon trip"
    (grant,) = [g for g in lab.owner.grants_of(reader.token_id) if g["rows"][0].get("datatypes")]
    panel.fields[f"rows:{grant['policy_id']}"].value = json.dumps(
        [{"permissions": ["memory.read"], "datatypes": ["food"]}]
    )
    panel.buttons[f"narrow:{grant['policy_id']}"].click()
    assert reader.served(row["id"]) is None, "narrowed off travel: the next read hides it"
    panel.key_switch.value = False
    assert alpha.grantees()["owner_public_key"] is None and "✓ Key setup" in panel.status.value
    panel.key_switch.value = True
    assert alpha.grantees()["owner_public_key"] is not None


def test_a_refusal_is_shown_and_the_panel_stays_usable():
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save")
    row = saved(alpha)
    panel = OwnerPanel(lab.owner)
    (tid,) = [k.split(":", 1)[1] for k in panel.buttons if k.startswith("widen:")]
    panel.fields[f"widen:{tid}"].value = "not json"
    panel.buttons[f"widen:{tid}"].click()
    assert panel.status.value.startswith("✗ Give more")
    panel.buttons[f"delete:{row['id']}"].click()
    assert lab.stored(row["id"]) is None and "Memories</b> (0)" in panel.children[3].children[0].value


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
