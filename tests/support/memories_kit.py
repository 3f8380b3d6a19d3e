"""Request bodies for PUT memories (plain edits, key rotations) and memory-wraps, built by hand."""

from __future__ import annotations

from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

PUT = "/api/agent/context/memories"


def key_of(peer, row_id):
    return sealing.unwrap_as_agent(peer.served(row_id)["wrapped_key"], peer.key)


def reseal_text(peer, row_id, text):
    """A plain edit body: same key, whole plaintext re-sealed with new content."""
    served = peer.served(row_id)
    key = key_of(peer, row_id)
    plain = sealing.open_json(key, served["ciphertext"])
    plain["observation"]["content"] = text
    return {"id": row_id, "expected_rev": served["rev"], "ciphertext": wire.b64encode(sealing.seal_json(key, plain))}


def rotation(peer, row_id, lab, *, grantees=(), drop=(), **extra):
    """A rotation body by hand: new key, owner and self wraps, wraps for `grantees` (peer, via)."""
    served = peer.served(row_id)
    old = key_of(peer, row_id)
    plain = sealing.open_json(old, served["ciphertext"])
    new = random_key()
    body = {
        "id": row_id,
        "expected_rev": served["rev"],
        "kid": wire.kid(new),
        "ciphertext": wire.b64encode(sealing.seal_json(new, plain)),
        "owner_wrap": wire.b64encode(sealing.wrap_to_owner(new, lab.owner.public_key_b64)),
        "self_wrap": wire.b64encode(sealing.wrap_to_agent(new, peer.key.public_key_b64)),
        "grantee_wraps": [
            {
                "token_id": g.token_id,
                "via": via,
                "wrapped_key": wire.b64encode(sealing.wrap_to_agent(new, g.key.public_key_b64)),
            }
            for g, via in grantees
        ],
    }
    for k in drop:
        body.pop(k)
    body.update(extra)
    return body, new


WRAPS = "/api/agent/context/memory-wraps"


def wraps_body(row_id, kid, key, *pairs):
    return {
        "row_id": row_id,
        "kid": kid,
        "wraps": [
            {
                "token_id": p.token_id,
                "via": via,
                "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, p.key.public_key_b64)),
            }
            for p, via in pairs
        ],
    }
