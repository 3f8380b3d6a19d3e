"""The sandbox stores what Decoy stores, and the owner's-eye check names what the app cannot open.

Decoy never decrypts, so a row sealed wrongly inside its blobs is accepted and "the app silently
can't read it"; `app-view` flags each such row with the reason. `--strict` (`strict=True`) keeps
the sandbox's own 400s for a layout it can see is wrong."""

from __future__ import annotations

import pytest

from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire

from support.missealed import CLASSES
from support.sandbox_kit import reseal, sealed_row

KEY = bytes(range(32))


def _plain(row_id: str, **over) -> dict:
    return {
        "v": 2,
        "row_id": row_id,
        "observation": {"entityName": "default_user", "content": "x"},
        "about": ["user"],
        "categories": [],
        **over,
    }


def _classes(alpha) -> dict[str, tuple[dict, str]]:
    """Each class of wrongly sealed row, and the problem the owner's app meets."""
    keys = alpha.keys(grantees=False)
    good = alpha.new_row("fine", grantees=False)
    rid = "11111111-1111-4111-8111-111111111111"
    return {
        "raw key in owner_wrap": (sealed_row(keys, _plain(rid), row_id=rid, owner_payload=KEY), "owner_wrap"),
        "plaintext bound to another id": (
            sealed_row(
                keys, _plain("22222222-2222-4222-8222-222222222222"), row_id="33333333-3333-4333-8333-333333333333"
            ),
            "binding",
        ),
        "v is not 2": (
            sealed_row(
                keys, _plain("44444444-4444-4444-8444-444444444444", v=1), row_id="44444444-4444-4444-8444-444444444444"
            ),
            "version",
        ),
        "a headerless envelope as owner_wrap": (reseal(good, owner_wrap=good["self_wrap"]), "owner_wrap"),
        "ciphertext not a VAULT blob": (
            reseal(alpha.new_row("y", grantees=False), ciphertext=wire.b64encode(b"\x02\x01" + bytes(40))),
            "ciphertext",
        ),
        "kid of another key": (
            reseal(alpha.new_row("z", grantees=False), kid=wire.kid(KEY)),
            "kid_mismatch",
        ),
        "a wrong header byte in owner_wrap": (
            _owner_header(alpha.new_row("h", grantees=False), b"\x01\x03"),
            "owner_wrap",
        ),
        "plaintext not UTF-8 JSON": (_sealed_bytes(keys, b"\xff not json"), "json"),
        "a plaintext field of the wrong type": (
            sealed_row(keys, _plain(rid2 := "55555555-5555-4555-8555-555555555555", categories="travel"), row_id=rid2),
            "fields",
        ),
    }


def _owner_header(row: dict, header: bytes) -> dict:
    wrap = wire.b64decode(row["owner_wrap"])
    return reseal(row, owner_wrap=wire.b64encode(header + wrap[2:]))


def _sealed_bytes(keys, plain: bytes) -> dict:
    """A row whose ciphertext opens, under the key owner_wrap holds, to `plain` (any bytes)."""
    row = sealed_row(keys, {})
    return reseal(row, ciphertext=wire.b64encode(sealing.seal_vault(KEY, plain)))


def test_the_classes_are_every_class_the_client_is_checked_for(lab):
    """One list (support/missealed.py) for both sides: the client's verify step is tested on the same classes."""
    assert {w: p for w, (_, p) in _classes(lab.pair("alpha", "memory.save")).items()} == CLASSES


def test_every_class_of_wrongly_sealed_row_is_stored_and_flagged(lab):
    alpha = lab.pair("alpha", "memory.save")
    for what, (row, problem) in _classes(alpha).items():
        r = alpha.save([row])
        assert r.status_code == 201 and r.json()["created"] == [row["id"]], (what, r.text)
        view = lab.view(row["id"])
        assert view["readable"] is False and view["problem"] == problem, what
        assert view["reason"], what


def test_strict_keeps_the_400s_for_a_layout_the_server_can_see(lab):
    lab.state.strict = True
    alpha = lab.pair("alpha", "memory.save")
    classes = _classes(alpha)
    for what in (
        "a headerless envelope as owner_wrap",
        "a wrong header byte in owner_wrap",
        "ciphertext not a VAULT blob",
    ):
        r = alpha.save([classes[what][0]])
        assert r.status_code == 400 and r.json()["code"] in ("INVALID_WRAP", "INVALID_CIPHERTEXT"), what
    # what no server can see is stored even so: the owner's-eye check is the one that finds it
    row, problem = classes["raw key in owner_wrap"]
    assert alpha.save([row]).status_code == 201 and lab.view(row["id"])["problem"] == problem


@pytest.mark.parametrize("strict", [False, True])
def test_plaintext_json_in_place_of_a_ciphertext_is_always_refused(lab, strict):
    lab.state.strict = strict
    alpha = lab.pair("alpha", "memory.save")
    row = reseal(alpha.new_row("x"), ciphertext=wire.b64encode(sealing.json_bytes({"text": "hi"})))
    assert alpha.save([row]).json()["code"] == "PLAINTEXT_REJECTED"


def test_strict_is_an_option_of_the_sandbox_and_of_its_command(monkeypatch):
    import argparse

    from decoy_lab.sandbox import Sandbox, server

    p = argparse.ArgumentParser()
    server.add_arguments(p)
    assert p.parse_args(["--strict"]).strict is True and p.parse_args([]).strict is False
    seen = {}
    monkeypatch.setattr(server, "run", lambda *a, **kw: seen.update(kw) or 0)
    server.run_args(p.parse_args(["--strict"]))
    assert seen["strict"] is True
    with Sandbox.start(seed="none", strict=True) as sb:
        assert sb.state.strict is True
    with Sandbox.start(seed="none") as sb:
        assert sb.state.strict is False, "by default the sandbox stores what Decoy stores"
