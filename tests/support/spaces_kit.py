"""Legacy spaces made by hand through the sandbox's space routes: bodies, rows and grants."""

from __future__ import annotations

import uuid

from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

SPACES, ROWS = "/api/agent/context/spaces", "/api/agent/context/rows"

READ = {"permissions": ["memory.read"]}


EDIT = {"permissions": ["memory.edit"]}


DELETE = {"permissions": ["memory.delete"]}


def space_body(lab, peer, key, *grantees):
    return {
        "kind": "me",
        "skid": wire.kid(key),
        "own_wrap": wire.b64encode(sealing.wrap_to_agent(key, peer.key.public_key_b64)),
        "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, lab.owner.public_key_b64)),
        "grantee_wraps": [
            {"token_id": g.token_id, "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, g.key.public_key_b64))}
            for g in grantees
        ],
    }


def make_space(lab, peer, *grantees):
    key = random_key()
    r = peer.post(SPACES, space_body(lab, peer, key, *grantees))
    assert r.status_code == 201, r.text
    return r.json(), key


def row_body(space_id, key, plain):
    rid = str(uuid.uuid4())
    return {
        "id": rid,
        "skid": wire.kid(key),
        "ciphertext": wire.b64encode(sealing.seal_space_row(key, plain, space_id=space_id, row_id=rid)),
    }


OBS = {"observation": {"entityName": "default_user", "content": "Prefers meetings after 10 am."}}
