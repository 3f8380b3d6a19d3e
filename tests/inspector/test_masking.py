"""The masker as an agent's secrets meet it: wherever a secret first shows itself (a header, a JSON
member, a form field, a query parameter), it is learned, and then hidden in every spelling the
record may hold it in. Shorter values, user codes and other members are never learned."""

from __future__ import annotations

import json
import secrets
from urllib.parse import quote, quote_plus

import pytest

from decoy_lab.inspector import Inspector
from decoy_lab.inspector.masking import MIN_SECRET, Masker, bearer
from decoy_lab.secret import secret_fingerprint

pytestmark = pytest.mark.timeout(120)


def _secret(prefix: str) -> str:
    return f"{prefix}-{secrets.token_urlsafe(18)}"


def _record(insp: Inspector, tmp_path) -> str:
    """Everything the record shows of its flows, the saved HAR included."""
    insp.settle()
    parts = [repr(insp), insp.flows.to_json()]
    for f in insp:
        parts += [repr(f), json.dumps(f.to_dict()), f.summary(), f.query]
        parts += [repr(f.request_headers), f.request_body.data.decode("latin-1")]
    parts.append(insp.save(tmp_path / "run.har").read_text())
    return "\n".join(parts)


def test_a_secret_sent_only_in_a_query_string_or_a_form_never_reaches_the_record(sandbox, agent_key, client, tmp_path):
    """An agent that puts its secrets in a query string and a form body (and nowhere else, so no
    JSON answer or header teaches them) still leaves only their fingerprints in the record."""
    in_query, in_form, token = _secret("q"), _secret("f"), _secret("t")
    with Inspector.start(sandbox=sandbox, agent_key=agent_key) as insp:
        client.get(f"{insp.url}/api/agent/policies", params={"client_secret": in_query, "page": "1"})
        client.post(f"{insp.url}/oauth/introspect", data={"client_id": "by-hand", "token": token})
        client.post(f"{insp.url}/oauth/revoke", data={"client_secret": in_form, "token": "short"})
        text = _record(insp, tmp_path)
    for s in (in_query, in_form, token):
        assert s not in text
        assert quote_plus(s) not in text
        assert secret_fingerprint(s) in text
    assert "page=1" in text  # what is not a secret stays readable


def test_a_query_teaches_its_secret_members_only():
    m = Masker()
    m.learn_query(f"client_secret={quote('sec ret/1234')}&page=123456789&token=&code_verifier=verifier-1")
    assert "sec ret/1234" in m and "verifier-1" in m
    assert "123456789" not in m and len(m) == 2


@pytest.mark.parametrize(
    "ctype", ["application/x-www-form-urlencoded", "Application/X-WWW-Form-Urlencoded; charset=utf-8"]
)
def test_a_form_body_teaches_its_secret_fields(ctype):
    m = Masker()
    m.learn_body(b"grant_type=refresh&refresh_token=rt-abcdef123&client_id=agent-one", ctype)
    assert "rt-abcdef123" in m and "agent-one" not in m
    assert (
        m.mask_bytes(b"refresh_token=rt-abcdef123") == b"refresh_token=" + secret_fingerprint("rt-abcdef123").encode()
    )


def test_a_form_that_is_not_utf8_teaches_nothing_and_does_not_break():
    m = Masker()
    m.learn_body(b"token=\xff\xfe-not-utf8-123", "application/x-www-form-urlencoded")
    m.learn_body(b"", "application/x-www-form-urlencoded")
    assert len(m) == 0


def test_a_form_is_not_read_as_json_and_json_not_as_a_form():
    m = Masker()
    m.learn_body(b'{"access_token": "json-in-a-form-1"}', "application/x-www-form-urlencoded")
    m.learn_body(b"access_token=form-as-json-1", "application/json")
    assert len(m) == 0
    m.learn_body(b'{"access_token": "untyped-json-1"}', None)  # an untyped body that is JSON: read
    m.learn_body(b'[{"password": "in-a-list-123"}]', "text/plain")
    assert "untyped-json-1" in m and "in-a-list-123" in m


def test_json_teaches_nested_secret_members_but_not_other_values():
    m = Masker()
    body = {"a": [{"b": {"refresh_token": "nested-secret-1"}}], "id_token": 123456789, "note": "not-a-secret-1"}
    m.learn_body(json.dumps(body).encode(), "application/json; charset=utf-8")
    assert "nested-secret-1" in m and "not-a-secret-1" not in m and len(m) == 1
    m.learn_body(b'{"access_token": ', "application/json")  # cut short: teaches nothing, raises nothing
    assert len(m) == 1


def test_json_nested_past_the_depth_limit_is_not_walked():
    m = Masker()
    deep: object = {"access_token": "too-deep-123"}
    for _ in range(80):
        deep = {"x": deep}
    m.learn_body(json.dumps(deep).encode(), "application/json")
    shallow: object = {"access_token": "shallow-123"}
    for _ in range(60):
        shallow = {"x": shallow}
    m.learn_body(json.dumps(shallow).encode(), "application/json")
    assert "too-deep-123" not in m and "shallow-123" in m


def test_a_value_shorter_than_min_secret_is_never_learned():
    m = Masker()
    m.learn("a" * (MIN_SECRET - 1))
    m.learn(12345678)
    m.learn(None)
    assert len(m) == 0
    m.learn("b" * MIN_SECRET)
    assert "b" * MIN_SECRET in m and len(m) == 1
    m.learn("b" * MIN_SECRET)  # learned once
    assert len(m) == 1


def test_every_spelling_of_a_learned_secret_is_masked():
    raw = 'se/cr"et +key\\x'
    m = Masker()
    m.learn(raw)
    fp = secret_fingerprint(raw)
    for spelled in (raw, json.dumps(raw)[1:-1], quote(raw, safe=""), quote_plus(raw)):
        assert m.mask_text(f"<{spelled}>") == f"<{fp}>"
        assert m.mask_bytes(f"<{spelled}>".encode()) == f"<{fp}>".encode()


def test_a_secret_inside_a_longer_one_does_not_break_the_longer_ones_mask():
    short, long = "abcdef12", "abcdef12-and-more"
    m = Masker()
    m.learn(short)
    m.learn(long)
    assert m.mask_text(f"{long} {short}") == f"{secret_fingerprint(long)} {secret_fingerprint(short)}"


def test_the_masked_text_keeps_characters_that_are_not_utf8_safe():
    m = Masker()
    m.learn("secret-123")
    assert m.mask_text("\udcff secret-123 é") == f"\udcff {secret_fingerprint('secret-123')} é"
    assert m.mask_text("") == "" and m.mask_bytes(b"") == b""
    assert Masker().mask_text("secret-123") == "secret-123"  # nothing learned: nothing changes


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("Authorization", "Bearer tok-bearer-1", "tok-bearer-1"),
        ("Proxy-Authorization", "Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("authorization", "  justatoken-1  ", "justatoken-1"),
        ("Cookie", "sid=cookie-val-1; other=x", "cookie-val-1"),
        ("Set-Cookie", "sid=set-cookie-1; Path=/; HttpOnly", "set-cookie-1"),
        ("Set-Cookie", "bare-cookie-1; Path=/", "bare-cookie-1"),
        ("X-Sandbox-Token", " sandbox-tok-1 ", "sandbox-tok-1"),
    ],
)
def test_a_secret_header_teaches_its_credential_and_is_recorded_as_its_fingerprint(name, value, secret):
    m = Masker()
    m.learn_headers([(name, value), ("X-Other", "harmless-value-1")])
    assert secret in m and "harmless-value-1" not in m and len(m) == 1
    (got_name, got_value), other = m.mask_headers([(name, value), ("X-Echo", f"was {secret}")])
    assert got_name == name and secret not in got_value and secret_fingerprint(secret) in got_value
    assert other == ("X-Echo", f"was {secret_fingerprint(secret)}")  # learned: masked in any header


def test_a_secret_header_is_masked_even_when_its_credential_is_too_short_to_learn():
    m = Masker()
    [(_, value)] = m.mask_headers([("Authorization", "Bearer abc")])
    assert value == f"Bearer {secret_fingerprint('abc')}" and len(m) == 0


def test_a_header_that_already_holds_a_fingerprint_is_kept_as_it_is():
    fp = secret_fingerprint("whatever-1")
    assert Masker().mask_headers([("Authorization", f"Bearer {fp}")]) == [("Authorization", f"Bearer {fp}")]


def test_reveal_masks_nothing_and_the_repr_never_shows_a_secret():
    m = Masker(reveal=True)
    m.learn_headers([("Authorization", "Bearer tok-reveal-1")])
    assert m.mask_text("tok-reveal-1") == "tok-reveal-1"
    assert m.mask_bytes(b"tok-reveal-1") == b"tok-reveal-1"
    assert m.mask_headers([("Authorization", "Bearer tok-reveal-1")]) == [("Authorization", "Bearer tok-reveal-1")]
    assert repr(m) == "<Masker 1 secrets learned, revealing>"
    hidden = Masker()
    hidden.learn("tok-hidden-1")
    assert repr(hidden) == "<Masker 1 secrets learned>" and "tok-hidden-1" not in repr(hidden)


@pytest.mark.parametrize(
    ("headers", "token"),
    [
        ([("Accept", "*/*"), ("authorization", "Bearer  tok-1 ")], "tok-1"),
        ([("Authorization", "bearer tok-2")], "tok-2"),
        ([("Authorization", "Basic tok-3")], None),
        ([("Authorization", "Bearer ")], None),
        ([("X-Authorization", "Bearer tok-4")], None),
        ([], None),
    ],
)
def test_bearer_finds_the_requests_bearer_token(headers, token):
    assert bearer(headers) == token


def test_a_credential_with_spaces_or_equals_signs_is_hidden_whole():
    """A Digest `Authorization` is all of what follows its scheme, and a cookie's value may end in
    base64 padding: the whole credential is what is learned and recorded as its fingerprint."""
    digest = 'username="alice", response="6629fae49393a05397450978507c4ef1"'
    padded = "YWJjZGVmZ2hpams="
    m = Masker()
    m.learn_headers([("Authorization", f"Digest {digest}"), ("Cookie", f"sid={padded}; theme=dark")])
    assert digest in m and padded in m and len(m) == 2
    assert m.mask_headers([("Cookie", f"sid={padded}")]) == [("Cookie", f"sid={secret_fingerprint(padded)}")]


def _nested(levels: int, inner: object, wrap) -> object:
    for _ in range(levels):
        inner = wrap(inner)
    return inner


@pytest.mark.parametrize("wrap", [lambda o: {"x": o}, lambda o: [o]], ids=["objects", "arrays"])
def test_json_is_walked_exactly_max_depth_levels_deep(wrap):
    """The secret member of a value MAX_DEPTH levels down is learned; one level further is not
    (a hostile body cannot make the walk recurse without end)."""
    from decoy_lab.inspector.masking import MAX_DEPTH

    m = Masker()
    m.learn_body(json.dumps(_nested(MAX_DEPTH, {"access_token": "at-the-limit"}, wrap)).encode(), "application/json")
    m.learn_body(json.dumps(_nested(MAX_DEPTH + 1, {"access_token": "past-the-limit"}, wrap)).encode(), None)
    m.learn_body(json.dumps(_nested(40, {"access_token": "forty-down"}, wrap)).encode(), None)
    assert "at-the-limit" in m and "forty-down" in m and "past-the-limit" not in m
