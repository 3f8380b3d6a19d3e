"""No secret of a recorded run is in its record: flows, to_dict, the DataFrames, the HAR, reprs.
Each is there as its fingerprint; `reveal=True` is the one way to see them."""

from __future__ import annotations

import json

import pytest

from decoy_lab import Connection
from decoy_lab.inspector import Inspector
from decoy_lab.inspector.masking import Masker
from decoy_lab.secret import secret_fingerprint
from decoy_lab.vocab import DEVICE_GRANT, REFRESH_GRANT

pytestmark = pytest.mark.timeout(120)


def _run(url: str, client, agent_key, sandbox_url: str) -> list[str]:
    """Pair by hand (every secret of the device flow passes), refresh, call with the token in the
    header and in a query string, and pair a Connection that saves a memory (its verify step asks
    the owner's view, which the inspector refuses to pass on); returns every secret that went by,
    and last the sandbox's own token, which the user reads at the sandbox, not through the proxy."""
    dev = client.post(
        f"{url}/oauth/device",
        json={
            "client_id": "by-hand",
            "name": "By hand",
            "agent_public_key": agent_key.public_key_b64,
            "authorization_details": [{"permissions": ["memory.read"]}],
        },
    ).json()
    form = {"grant_type": DEVICE_GRANT, "device_code": dev["device_code"], "client_id": "by-hand"}
    tok = client.post(f"{url}/oauth/token", data=form).json()
    again = client.post(
        f"{url}/oauth/token",
        data={"grant_type": REFRESH_GRANT, "refresh_token": tok["refresh_token"], "client_id": "by-hand"},
    ).json()
    head = {"Authorization": f"Bearer {again['access_token']}"}
    assert client.get(f"{url}/api/agent/context/memories", headers=head).status_code == 200
    client.get(f"{url}/api/agent/policies", params={"access_token": again["access_token"]}, headers=head)
    client.post(f"{url}/oauth/introspect", data={"token": again["access_token"], "client_id": "by-hand"})
    assert client.get(f"{url}/_sandbox/token").status_code == 403
    sandbox_token = client.get(f"{sandbox_url}/_sandbox/token").json()["token"]
    conn = Connection.pair(url, name="Paired", agent_key=agent_key, profile=None, on_link=lambda *a: None)
    try:
        conn.save("A memory.")
        secrets = [conn.tokens.access_token.reveal(), conn.tokens.refresh_token.reveal()]
    finally:
        conn.close()
    return [
        dev["device_code"],
        tok["access_token"],
        tok["refresh_token"],
        again["access_token"],
        again["refresh_token"],
        *secrets,
        sandbox_token,
    ]


def _everything(insp: Inspector, tmp_path) -> str:
    insp.settle()
    parts = [repr(insp), insp.flows.to_json(), insp.flows.to_string()]
    for f in insp:
        parts += [repr(f), json.dumps(f.to_dict()), f.summary(), repr(f.request_headers), repr(f.response_headers)]
        parts += [f.request_body.data.decode("latin-1"), f.response_body.data.decode("latin-1"), f.query]
        parts.append(insp.rows(f).to_json())
    path = insp.save(tmp_path / "run.har")
    parts.append(path.read_text())
    return "\n".join(parts)


def test_every_secret_is_masked_everywhere(sandbox, agent_key, client, tmp_path):
    with Inspector.start(sandbox=sandbox, agent_key=agent_key) as insp:
        secrets = _run(insp.url, client, agent_key, sandbox.url)
        text = _everything(insp, tmp_path)
        user_codes = [f for f in insp if f.path == "/oauth/device"]
    assert len(set(secrets)) == len(secrets)
    for s in secrets:
        assert s not in text
    for s in secrets[:5]:
        assert secret_fingerprint(s) in text  # masked as its fingerprint, so flows still match up
    views = [f for f in insp if f.path == "/_sandbox/app-view"]  # the verify step's ask of the owner's view
    assert views and all(f.status == 403 and b"A memory." not in f.response_body.data for f in views)
    assert "Bearer sha256:" in text
    assert all(b"user_code" in f.response_body.data for f in user_codes)  # shown to people: kept


def test_reveal_shows_them(sandbox, agent_key, client, tmp_path):
    with Inspector.start(sandbox=sandbox, agent_key=agent_key, reveal=True) as insp:
        secrets = _run(insp.url, client, agent_key, sandbox.url)
        text = _everything(insp, tmp_path)
    assert all(s in text for s in secrets[:4])


@pytest.mark.parametrize(
    "body",
    [
        b'{"access_token": "tok-plain-123456"}',
        b'{"data": {"\\u0070assword": "tok-escaped-123456"}}',  # a name written with an escape
        '{"refresh_token": "tok-utf16-123456"}'.encode("utf-16"),  # json reads UTF-16 too
        b'\xef\xbb\xbf{"items": [{"client_secret": "tok-bom-123456"}]}',
    ],
    ids=["plain", "escaped-name", "utf-16", "utf-8-bom"],
)
def test_a_secret_member_is_learned_however_its_body_is_written(body):
    """A body is parsed for secrets unless no secret member's name can be in it: a name spelled
    with an escape, or a body in another encoding json reads, still teaches its secret."""
    m = Masker()
    m.learn_body(body, "application/json")
    secret = json.loads(body)
    value = next(iter(_strings(secret)))
    assert value in m and m.mask_text(f"x {value} y") == f"x {secret_fingerprint(value)} y"


def test_a_body_naming_no_secret_teaches_nothing():
    m = Masker()
    rows = [{"id": f"r{i}", "ciphertext": "QUJD" * 40, "kid": "k" * 16, "token_count": 3} for i in range(50)]
    m.learn_body(json.dumps({"memories": rows, "next": "cursor-123456"}).encode(), "application/json")
    assert len(m) == 0


def _strings(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, str):
        yield obj
