"""Seeded faults on the memory routes: 5xx before commit, a dropped answer after commit."""

from __future__ import annotations

import httpx
import pytest

from decoy_lab.sandbox.checks.faults import ConnectionDropped, Faults

from support.sandbox_kit import Lab, key


def test_error_5xx_answers_503_before_commit():
    """A 5xx is an unknown outcome for the client; here nothing was written."""
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save")
    row = alpha.new_row("x")  # memory-grantees is a memory route too: build the row before the fault
    lab.state.faults.configure({"error_5xx": 1.0, "seed": 1})
    r = alpha.save([row])
    assert r.status_code == 503 and r.json()["code"] == "SERVICE_UNAVAILABLE"
    assert lab.stored(row["id"]) is None
    assert alpha.get("/api/agent/context/memories").status_code == 503
    assert alpha.get("/api/agent/policies").status_code == 200  # only memory routes
    assert lab.state.faults.counts["error_5xx"] == 2


def test_drop_after_commit_commits_then_aborts():
    """ "the write commits and the answer is dropped (the client sees a network error)"; resending the same
    sealed rows then finds them under `existing`."""
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save")
    row = alpha.new_row("x")
    lab.state.faults.configure({"drop_after_commit": 1.0, "seed": 3})
    with pytest.raises(ConnectionDropped):
        alpha.save([row])
    assert lab.stored(row["id"]) is not None
    lab.state.faults.configure({})
    assert alpha.save([row]).json()["existing"] == [row["id"]]


def test_reads_are_not_dropped():
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save")
    lab.state.faults.configure({"drop_after_commit": 1.0})
    assert alpha.get("/api/agent/context/memories").status_code == 200


def outcomes(seed):
    lab = Lab()
    alpha = lab.pair("alpha", "memory.save")
    lab.state.faults.configure({"error_5xx": 0.5, "seed": seed})
    return [alpha.get("/api/agent/context/memories").status_code for _ in range(24)]


def test_seeded_runs_repeat():
    """ "Seeded, so a run repeats."""
    a, b = outcomes(11), outcomes(11)
    assert a == b and {200, 503} == set(a)
    assert outcomes(12) != a


@pytest.mark.parametrize(
    "settings",
    [
        {"error_5xx": 2},
        {"drop_after_commit": -0.1},
        {"latency_ms": -1},
        {"bogus": 1},
        {"error_5xx": True},
        {"seed": 1.5},
    ],
)
def test_bad_settings_are_refused(settings):
    with pytest.raises(ValueError):
        Faults.from_settings(settings)


def test_settings_round_trip():
    f = Faults.from_settings({"error_5xx": 0.25, "latency_ms": 10, "seed": 5})
    assert f.as_json() == {
        "error_5xx": 0.25,
        "drop_after_commit": 0.0,
        "latency_ms": 10,
        "seed": 5,
        "counts": {"error_5xx": 0, "drop_after_commit": 0},
    }
    assert f.active and not Faults.from_settings(None).active and not Faults.from_settings({}).active


def test_faults_surface_replaces_settings():
    lab = Lab(faults={"error_5xx": 1.0})
    r = lab.client.post("/_sandbox/faults", json={})
    assert r.status_code == 200
    alpha = lab.pair("alpha", "memory.save")
    assert alpha.get("/api/agent/context/memories").status_code == 200


def test_a_real_client_sees_a_network_error_and_the_write_landed():
    """Over real HTTP (uvicorn): the dropped answer is a transport error, not a status code."""
    from decoy_lab import memory
    from decoy_lab.sandbox.server import Sandbox
    from decoy_lab.sandbox.testing import pair_agent

    with Sandbox.start(seed="none", owner_key=key("owner")) as sb:
        tok = pair_agent(sb.url, key("alpha"), [{"permissions": ["memory.save"]}], name="alpha")
        headers = {"Authorization": f"Bearer {tok['access_token']}"}
        with httpx.Client(base_url=sb.url, headers=headers, timeout=10) as http:
            g = http.get("/api/agent/context/memory-grantees").json()
            row = memory.new_memory_row(memory.RecipientKeys.from_response(g, key("alpha").public_key_b64), "x")
            assert http.post("/_sandbox/faults", json={"drop_after_commit": 1.0, "seed": 9}).status_code == 200
            with pytest.raises(httpx.TransportError):
                http.post("/api/agent/context/memories", json={"rows": [row]})
            assert http.post("/_sandbox/faults", json={}).status_code == 200
            r = http.post("/api/agent/context/memories", json={"rows": [row]})
            assert r.status_code == 201 and r.json()["existing"] == [row["id"]]
