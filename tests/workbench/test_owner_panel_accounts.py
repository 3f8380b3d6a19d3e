"""The owner's phone panel for the account family: an unlock allowed or not, a queued edit of a
Decoy address applied or rejected — each through the sandbox's Owner, as the Decoy app does.

001, `unlock_request`: "otherwise the owner is asked on their phone and the request is `pending`";
the poll: "`ready` (the owner allowed it; `items: [{ target_id, sealed_envelope }]` once), `denied`
(the owner tapped Don't Allow …)". `decoy_edit_request`: "the owner's devices are woken by a silent
push, apply it to the sealed details and re-seal them"; `decoy_edit_mark_rejected`: "`reason` is
one of a fixed set of codes, never free text".
"""

from __future__ import annotations

import html
import json

from decoy_lab.recipes import sealing
from decoy_lab.widgets import OwnerPanel

from support.acctfamily_kit import create, sealed_to
from support.sandbox_kit import Lab

OTHER = "3f1c2a4e-0000-4000-8000-000000000001"


def _said(panel: OwnerPanel) -> str:
    return html.unescape(panel.status.value)


def _asking(lab: Lab):
    """An account made by one connection, and another that asks to read it (pending)."""
    maker = lab.pair("maker", "account.create")
    account = create(maker, {"name": "Acme", "username": "me@acme.test"})
    asker = lab.pair("asker", {"permissions": ["account.read"], "account_id": OTHER})
    lab.state.approve = "manual"
    r = asker.post("/api/agent/unlock", {"target": {"kind": "account", "id": account["id"]}, "reason": "Sign in"})
    assert r.status_code == 201 and r.json()["status"] == "pending", r.text
    return account, asker, r.json()["id"]


def test_an_unlock_is_allowed_from_the_panel_and_read_once():
    lab = Lab()
    account, asker, rid = _asking(lab)
    panel = OwnerPanel(lab.owner, follow=0)
    assert panel.fields["unlock"].label == "asker asks to read Acme's every secret · “Sign in”"
    assert "1 unlock" in panel.account_title.value and panel.edit_rows.layout.display == "none"
    panel.buttons["allow-unlock"].click()
    assert _said(panel) == "✓ Allowed asker to read Acme: sealed to its key"
    polled = asker.get(f"/api/agent/unlock/{rid}").json()
    assert polled["status"] == "ready" and polled["items"][0]["target_id"] == account["id"]
    opened = json.loads(sealing.open_envelope(polled["items"][0]["sealed_envelope"], asker.key, owner=False))
    assert opened["record"]["name"] == "Acme"
    assert panel.unlock_row.layout.display == "none" and "nothing is waiting" in panel.account_title.value


def test_an_unlock_not_allowed_reads_denied_and_a_second_answer_is_refused():
    lab = Lab()
    _account, asker, rid = _asking(lab)
    panel = OwnerPanel(lab.owner, follow=0)
    panel.buttons["deny-unlock"].click()
    assert _said(panel) == "✓ Did not allow asker to read Acme"
    assert asker.get(f"/api/agent/unlock/{rid}").json()["status"] == "denied"
    panel.buttons["allow-unlock"].click()
    assert _said(panel) == "✗ Allow: no unlock is waiting"


def test_queued_edits_are_applied_or_rejected_one_at_a_time():
    lab = Lab()
    maker = lab.pair("maker", "account.create")
    made = maker.post("/api/agent/decoys", {"service_name": "Acme"}).json()
    queue = f"/api/agent/decoys/{made['id']}/edits"
    good = maker.post(
        queue, {"sealed_patch": sealed_to(lab.owner.public_key_b64, {"v": 1, "set": {"serviceName": "Acme Pro"}})}
    )
    lab.clock.advance(1)
    junk = maker.post(queue, {"sealed_patch": sealed_to(lab.owner.public_key_b64, {"v": 1, "set": {"colour": "red"}})})
    panel = OwnerPanel(lab.owner, follow=0)
    tree = {w.model_id for w in panel.children}
    labels = [label for label, _ in panel.fields["decoy-edit"].options]
    assert labels[0] == f"maker: {made['email']} (now “Acme”): name → “Acme Pro”"
    assert labels[1].endswith("⚠ no_supported_keys"), "the phone says what it would reject"
    panel.buttons["apply-edit"].click()
    assert _said(panel) == f"✓ Applied maker's edit of {made['email']} (revision 2)"
    assert maker.get(f"{queue}/{good.json()['edit_id']}").json()["status"] == "applied"
    panel.fields["reject-reason"].value = "no_supported_keys"
    panel.buttons["reject-edit"].click()
    assert _said(panel) == f"✓ Rejected maker's edit of {made['email']} (no_supported_keys)"
    seen = maker.get(f"{queue}/{junk.json()['edit_id']}").json()
    assert seen["status"] == "rejected" and seen["reject_reason"] == "no_supported_keys"
    assert panel.edit_rows.layout.display == "none"
    assert {w.model_id for w in panel.children} == tree, "values changed in place"


def test_a_new_unlock_changes_what_the_panel_looks_at():
    lab = Lab()
    panel = OwnerPanel(lab.owner, follow=0)
    before = panel.look()
    _asking(lab)
    assert panel.look() != before, "the panel's follower refreshes on an unlock it has not shown"
    panel.refresh()
    assert panel.fields["unlock"].label.startswith("asker asks to read Acme")


def test_a_passkey_sign_in_is_asked_as_a_sign_in_and_allowed_once():
    import base64

    lab = Lab()
    maker = lab.pair("maker", "account.create")
    account = create(maker, {"name": "Shop"})
    lab.owner.add_passkey(account["id"], "shop.example")
    lab.state.approve = "manual"
    client = b'{"type":"webauthn.get","challenge":"c","origin":"https://shop.example","crossOrigin":false}'
    passkey = {"rp_id": "shop.example", "client_data_json_b64": base64.b64encode(client).decode()}
    r = maker.post("/api/agent/unlock", {"target": {"kind": "account", "datatypes": ["passkey"], "passkey": passkey}})
    assert r.status_code == 201, r.text
    panel = OwnerPanel(lab.owner, follow=0)
    assert panel.fields["unlock"].label == "maker asks to sign in to Shop with its passkey, once"
    panel.buttons["allow-unlock"].click()
    assert _said(panel) == "✓ Allowed maker to sign in to Shop once"
    assert maker.get(f"/api/agent/unlock/{r.json()['id']}").json()["status"] == "ready"


def test_an_edit_the_phone_applied_on_its_own_is_said_so_not_refused():
    # `decoy_edit_request`: "the owner's devices are woken by a silent push, apply it to the sealed
    # details and re-seal them" — the phone's own pass can apply an edit a panel still lists.
    lab = Lab()
    maker = lab.pair("maker", "account.create")
    made = maker.post("/api/agent/decoys", {"service_name": "Acme"}).json()
    patch = {"v": 1, "set": {"serviceName": "Acme Pro"}}
    maker.post(f"/api/agent/decoys/{made['id']}/edits", {"sealed_patch": sealed_to(lab.owner.public_key_b64, patch)})
    applying, rejecting = OwnerPanel(lab.owner, follow=0), OwnerPanel(lab.owner, follow=0)
    assert "the phone's own pass is off: a queued edit waits for you" in html.unescape(applying.account_title.value)
    assert lab.client.post("/_sandbox/keep", json={}).json()["edits"] == 1  # the phone's pass, before the taps
    applying.buttons["apply-edit"].click()
    assert _said(applying) == f"✓ The phone had already applied maker's edit of {made['email']} on its own"
    rejecting.buttons["reject-edit"].click()
    assert _said(rejecting) == (
        f"✗ Reject edit: too late: the phone had already applied maker's edit of {made['email']} on its own"
    )
    for panel in (applying, rejecting):
        assert panel.edit_rows.layout.display == "none", "the answer, said or refused, refreshes the stale list"


def test_the_accounts_title_says_when_the_phone_applies_a_queued_edit_itself():
    lab = Lab(auto_share_after=5)
    maker = lab.pair("maker", "account.create")
    made = maker.post("/api/agent/decoys", {"service_name": "Acme"}).json()
    patch = {"v": 1, "set": {"serviceName": "Acme Pro"}}
    maker.post(f"/api/agent/decoys/{made['id']}/edits", {"sealed_patch": sealed_to(lab.owner.public_key_b64, patch)})
    panel = OwnerPanel(lab.owner, follow=0)
    assert "the phone applies a queued edit on its own about 5 s after it comes" in panel.account_title.value
