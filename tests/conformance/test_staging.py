"""The staging hop: each fault fires at its exchange, and only there."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.conformance.staging import Fault, StageHop
from decoy_lab.inspector.serve import serve_in_thread


@pytest.fixture
def upstream():
    seen: list[str] = []

    async def write(request):
        body = (await request.body()).decode()
        seen.append(body)
        if body.startswith("bad"):
            return JSONResponse({"code": "PLAINTEXT_REJECTED"}, status_code=400)
        return JSONResponse({"ok": True}, status_code=201)

    served = serve_in_thread(Starlette(routes=[Route("/w", write, methods=["POST", "GET"])]), name="hop-upstream")
    yield served.url, seen
    served.stop()


def hop_in_front(url: str, faults: list[Fault]):
    hop = StageHop(url, faults)
    return hop, serve_in_thread(hop, name="hop-under-test")


def test_answer_drop_and_their_turns(upstream):
    url, seen = upstream
    faults = [Fault("drop", "POST", "/w", (1,)), Fault("answer", "POST", "/w", (2,), 503, {"code": "X"})]
    hop, served = hop_in_front(url, faults)
    try:
        with httpx.Client(base_url=served.url) as c:
            with pytest.raises(httpx.RemoteProtocolError):
                c.post("/w", content=b"one")
            assert c.post("/w", content=b"two").status_code == 503
            assert c.post("/w", content=b"three").status_code == 201
    finally:
        served.stop()
    assert seen == ["one", "three"]  # the drop committed upstream; the 503 never reached it
    assert [e["kind"] for e in hop.events] == ["drop", "answer"]


def test_an_expired_token_stays_expired_and_a_new_one_works(upstream):
    url, _ = upstream
    hop, served = hop_in_front(url, [Fault("expire", "GET", "/w", (2,))])
    try:
        with httpx.Client(base_url=served.url) as c:
            old = {"Authorization": "Bearer tok-old-123456"}
            assert c.get("/w", headers=old).status_code == 201
            r = c.get("/w", headers=old)
            assert r.status_code == 401 and r.json()["code"] == "TOKEN_EXPIRED" and r.json()["recovery"] == "refresh"
            assert c.get("/w", headers=old).status_code == 401
            assert c.get("/w", headers={"Authorization": "Bearer tok-new-654321"}).status_code == 201
    finally:
        served.stop()
    assert "tok-old" not in repr(hop.events)  # only fingerprints are kept


def test_a_refused_write_keeps_its_refusal_and_the_drop_waits_for_a_kept_one(upstream):
    url, seen = upstream
    after = Fault("answer", "POST", "/w", (1,), 503, {"code": "X"}, after="drop")
    hop, served = hop_in_front(url, [Fault("drop", "POST", "/w", (1,)), after])
    try:
        with httpx.Client(base_url=served.url) as c:
            r = c.post("/w", content=b"bad one")
            assert r.status_code == 400 and r.json()["code"] == "PLAINTEXT_REJECTED"  # never cut
            with pytest.raises(httpx.RemoteProtocolError):
                c.post("/w", content=b"good")
            assert c.post("/w", content=b"good").status_code == 503  # the resend meets the 503
            assert c.post("/w", content=b"good").status_code == 201
    finally:
        served.stop()
    assert seen == ["bad one", "good", "good"]
    assert [e["kind"] for e in hop.events] == ["drop", "answer"]


def test_a_rate_limit_answers_429_with_retry_after(upstream):
    url, _ = upstream
    body = {"error": "rate_limited", "code": "RATE_LIMITED", "retry_after_seconds": 2}
    hop, served = hop_in_front(url, [Fault("answer", "GET", "/w", (1,), 429, body, headers=[("Retry-After", "2")])])
    try:
        with httpx.Client(base_url=served.url) as c:
            r = c.get("/w")
            assert r.status_code == 429 and r.headers["retry-after"] == "2" and r.json()["retry_after_seconds"] == 2
            assert c.get("/w").status_code == 201
    finally:
        served.stop()
    assert hop.events[0]["code"] == "RATE_LIMITED"
