"""What a web page, a rebinding name or a careless client is told by the sandbox's guard, word for
word (docs/security.md: the owner surface for the owner alone, no web page on the agent API, every
body typed and bounded): a refusal names what was refused and what would be accepted, so the
person reading it can tell an attack from their own mistake. In-process, with the peer and the
headers a page or another machine would send."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from decoy_lab.sandbox import create_app
from decoy_lab.sandbox.checks.guard import body_rule

BASE = "http://127.0.0.1:8787"


@pytest.fixture(scope="module")
def app():
    return create_app(":memory:", approve="manual", seed="none")


@pytest.fixture(scope="module")
def local(app):
    return TestClient(app, base_url=BASE, client=("127.0.0.1", 50000))


def _refused(r, status: int, code: str, message: str) -> None:
    assert (r.status_code, r.json()["code"], r.json()["message"]) == (status, code, message)


def test_another_machine_is_told_the_owner_surface_is_for_this_one(app):
    remote = TestClient(app, base_url=BASE, client=("203.0.113.5", 40000))
    _refused(
        remote.get("/_sandbox/pending"), 403, "LOOPBACK_ONLY", "the owner surface answers only clients on this machine"
    )


@pytest.mark.parametrize(
    "host,named",
    [
        ("evil.example:8787", "evil.example"),
        ("Xn--Evil.EXAMPLE", "xn--evil.example"),
        (":8787", ""),
        ("127.0.0.1.evil.example", "127.0.0.1.evil.example"),
        ("user@127.0.0.1:8787", ""),
        ("127.0.0.1:port", ""),
        ("127.0.0.1/x", ""),
        ("", ""),
    ],
)
def test_a_name_that_is_not_loopback_is_named_in_the_refusal(local, host, named):
    r = local.get("/_sandbox/pending", headers={"Host": host})
    _refused(r, 403, "HOST_REFUSED", f"the owner surface answers only under a loopback name, not {named!r}")


@pytest.mark.parametrize("host", ["127.0.0.1:8787", "LOCALHOST.:8787", "[::1]:8787", "127.9.9.9"])
def test_loopback_names_in_any_spelling_are_served(local, host):
    assert local.get("/_sandbox/pending", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "http://127.0.0.1:8787/page",
        "http://127.0.0.1:8787?x=1",
        "http://127.0.0.1:8787#top",
        "file://",
    ],
)
def test_a_page_from_another_origin_is_told_it_is_another_site(local, origin):
    r = local.get("/_sandbox/pending", headers={"Origin": origin})
    _refused(r, 403, "CROSS_SITE_REFUSED", "the owner surface refuses requests from another site")


@pytest.mark.parametrize("origin", [BASE, "https://127.0.0.1:8787"])
def test_the_sandboxs_own_origin_over_http_or_https_is_served(local, origin):
    assert local.get("/_sandbox/pending", headers={"Origin": origin}).status_code == 200


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_a_fetch_from_another_site_is_named_by_its_sec_fetch_site(local, site):
    r = local.get("/_sandbox/pending", headers={"Sec-Fetch-Site": site})
    _refused(r, 403, "CROSS_SITE_REFUSED", f"the owner surface refuses {site} requests")


@pytest.mark.parametrize("site", ["same-origin", "none"])
def test_the_owner_typing_the_address_or_on_the_page_is_served(local, site):
    assert local.get("/_sandbox/pending", headers={"Sec-Fetch-Site": site}).status_code == 200


def test_a_change_a_page_could_send_is_told_what_it_lacks(local):
    """A form post with no token is what any page can send: refused, naming the two ways in."""
    r = local.post("/_sandbox/share", data={"x": "1"})
    _refused(
        r,
        403,
        "CROSS_SITE_REFUSED",
        "a change on the owner surface is application/json or carries this run's token "
        "(x-sandbox-token header or `token` field)",
    )


@pytest.mark.parametrize(
    "path,content_type,reads",
    [
        ("/oauth/device", "text/plain", "application/json, not text/plain"),
        ("/oauth/device", None, "application/json, not an untyped body"),
        ("/oauth/par", "text/plain", "application/json or application/x-www-form-urlencoded, not text/plain"),
    ],
)
def test_a_body_of_another_type_is_told_the_types_its_route_reads(local, path, content_type, reads):
    headers = {"content-type": content_type} if content_type else {}
    r = local.post(path, content=b"{}", headers=headers)
    assert r.status_code == 415 and r.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert r.json()["message"] == f"this route reads {reads}"
    assert r.json()["accepts"] == list(body_rule("POST", path).types)


def _chunks(data: bytes):
    yield data[: len(data) // 2]
    yield data[len(data) // 2 :]


def test_a_body_of_exactly_the_cap_is_read_and_one_byte_more_is_413(local):
    cap = body_rule("POST", "/oauth/device").cap
    body = b'{"client_id": "x"' + b" " * (cap - 18) + b"}"
    assert len(body) == cap
    at_cap = local.post("/oauth/device", content=_chunks(body), headers={"content-type": "application/json"})
    assert at_cap.status_code != 413, at_cap.text
    over = local.post("/oauth/device", content=_chunks(body + b" "), headers={"content-type": "application/json"})
    _refused(over, 413, "BODY_TOO_LARGE", f"this route reads a body of at most {cap} bytes")
    assert over.json()["max_bytes"] == cap


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "Application/JSON; Charset=UTF-8",
        'application/json; charset="utf-8"',
        "application/json; charset = utf-8",
        "application/json;",
    ],
)
def test_json_with_or_without_a_utf8_charset_is_read(local, content_type):
    r = local.post("/oauth/device", content=b"{}", headers={"content-type": content_type})
    assert r.status_code != 415, (content_type, r.text)


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=latin-1", "application/json; boundary=x", "application/jsonx"]
)
def test_json_in_another_charset_or_with_other_parameters_is_415(local, content_type):
    r = local.post("/oauth/device", content=b"{}", headers={"content-type": content_type})
    assert r.status_code == 415 and r.json()["code"] == "UNSUPPORTED_MEDIA_TYPE", content_type


@pytest.mark.parametrize(
    "method,path",
    [("POST", "/api/agent/accounts"), ("PATCH", "/api/agent/accounts/a1"), ("PUT", "/api/agent/accounts/a1/fields/f1")],
)
def test_an_account_write_reads_json_up_to_a_sealed_records_size(local, method, path):
    """The account family's writes carry "a sealed record of up to 64 KB" beside other blobs: a
    body larger than any other agent route's cap passes the guard (the route answers it); another
    type is 415."""
    rule = body_rule(method, path)
    assert rule.types == ("application/json",) and rule.cap > body_rule(method, "/api/agent/other").cap
    big = b'{"pad": "' + b"x" * (body_rule("POST", "/api/agent/other").cap + 10) + b'"}'
    r = local.request(method, path, content=big, headers={"content-type": "application/json"})
    assert r.status_code not in (413, 415, 405), r.text
    r = local.request(method, path, content=b"x", headers={"content-type": "text/plain"})
    assert r.status_code == 415 and r.json()["message"] == "this route reads application/json, not text/plain"


def test_a_web_page_on_the_agent_api_is_told_so(local):
    r = local.post("/oauth/device", json={"client_id": "x"}, headers={"Origin": "http://evil.example"})
    _refused(r, 403, "CROSS_SITE_REFUSED", "the agent API refuses requests a web page sends (a non-loopback Origin)")


def test_a_declared_length_of_exactly_the_cap_is_read_and_one_more_is_413_unread(local):
    cap = body_rule("POST", "/oauth/device").cap
    body = b'{"client_id": "x"' + b" " * (cap - 18) + b"}"
    at_cap = local.post("/oauth/device", content=body, headers={"content-type": "application/json"})
    assert at_cap.status_code != 413, at_cap.text
    over = local.post("/oauth/device", content=body + b" ", headers={"content-type": "application/json"})
    _refused(over, 413, "BODY_TOO_LARGE", f"this route reads a body of at most {cap} bytes")
