"""The `lost-answers` scenario also loses the answer of an agent's first address create, so the
resend 001 asks for is seen: "Same idempotency_key again (a timeout, a retry) → 200, same id,
"idempotent_replay": true. Never a second address." The staging hop's 503 that meets the resend
of the lost memory write waits for a drop on its own route, not for the address's."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.conformance.rulebook import MEMORIES
from decoy_lab.conformance.scenarios import SCENARIOS
from decoy_lab.conformance.staging import Fault, StageHop
from decoy_lab.inspector.serve import serve_in_thread

DECOYS = "/api/agent/decoys"


@pytest.fixture
def hop():
    """A hop in front of an upstream with two write routes: `/w` (POST and PUT) and `/a`."""

    async def write(request):
        return JSONResponse({"ok": True}, status_code=201)

    routes = [Route("/w", write, methods=["POST", "PUT"]), Route("/a", write, methods=["POST"])]
    upstream = serve_in_thread(Starlette(routes=routes), name="lost-upstream")
    faults = [
        Fault("drop", "POST", "/a", (1,)),
        Fault("drop", "PUT", "/w", (1,)),
        Fault("drop", "POST", "/w", (1,)),
        Fault("answer", "POST", "/w", (1,), 503, {"code": "X"}, after="drop"),
    ]
    stage = StageHop(upstream.url, faults)
    served = serve_in_thread(stage, name="lost-hop")
    try:
        yield stage, httpx.Client(base_url=served.url)
    finally:
        served.stop()
        upstream.stop()


def test_a_drop_on_another_route_or_method_does_not_arm_the_503_of_the_resend(hop):
    stage, c = hop
    with c:
        for method, path in (("POST", "/a"), ("PUT", "/w")):
            with pytest.raises(httpx.RemoteProtocolError):
                c.request(method, path, content=b"x")  # another write's answer lost first
        with pytest.raises(httpx.RemoteProtocolError):
            c.post("/w", content=b"one")  # the first POST /w is still dropped, not met by the 503
        assert c.post("/w", content=b"one").status_code == 503  # its resend meets the 503
        assert c.post("/w", content=b"one").status_code == 201
    assert [(e["kind"], e["method"], e["path"]) for e in stage.events] == [
        ("drop", "POST", "/a"),
        ("drop", "PUT", "/w"),
        ("drop", "POST", "/w"),
        ("answer", "POST", "/w"),
    ]


def test_lost_answers_loses_the_first_address_create_and_keeps_its_memory_faults():
    faults = SCENARIOS["lost-answers"].faults(None)
    staged = [(f.kind, f.method, f.path, f.nth, f.after) for f in faults]
    assert ("drop", "POST", DECOYS, (1,), "") in staged
    assert ("drop", "POST", MEMORIES, (1,), "") in staged
    assert ("answer", "POST", MEMORIES, (1,), "drop") in staged  # the 503 meets only the memory resend
    assert len(staged) == 3
