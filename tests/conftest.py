"""Shared fixtures (kept small)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def agent_key():
    """One RSA-2048 agent key for a whole run (key generation is the slow part of many tests)."""
    from decoy_lab.wire.crypto import AgentKey

    return AgentKey.generate()


@pytest.fixture(scope="session")
def agent(agent_key):
    """The agent key under the short name the format tests use."""
    return agent_key


@pytest.fixture(scope="session")
def owner():
    """A second RSA-2048 key, the owner's, for a whole run."""
    from decoy_lab.wire.crypto import AgentKey

    return AgentKey.generate()


@pytest.fixture(scope="session")
def owner_pem() -> str:
    """A simulated owner phone's private key, as the sandbox takes it."""
    from decoy_lab.wire.crypto import AgentKey

    return AgentKey.generate().to_pem()


@pytest.fixture(scope="module")
def c():
    """The memory tests' cast: an owner, this agent and grantees, with their keys (support.memory_cast)."""
    from support.memory_cast import cast

    return cast()


@pytest.fixture(scope="module")
def keys(c):
    """RecipientKeys for the cast's agent."""
    return c.keys()


@pytest.fixture
def lab():
    """A fresh in-process sandbox with helpers to pair peers (support.sandbox_kit.Lab)."""
    from support.sandbox_kit import Lab

    return Lab()


@pytest.fixture
def alpha(lab):
    """A sandbox connection that holds only memory.save."""
    return lab.pair("alpha", "memory.save")


@pytest.fixture(scope="module")
def clock():
    """A clock the tests of one module move by hand (`clock.advance(seconds)`)."""
    from decoy_lab.sandbox import FakeClock

    return FakeClock(1_800_000_000.0)


@pytest.fixture(scope="module")
def clocked_sb(clock):
    """An empty sandbox on `clock`, one per test module, pairing without a poll wait."""
    from decoy_lab.sandbox import Sandbox

    with Sandbox.start(seed="none", clock=clock) as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


@pytest.fixture(scope="module")
def sb():
    """An empty sandbox on a loopback port, one per test module, pairing without a poll wait.
    Modules that need another kind (a fake clock, manual approval) define their own `sb`."""
    from decoy_lab.sandbox import Sandbox

    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


@pytest.fixture
def frames() -> dict:
    from support.frames import make_frames

    return make_frames()


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    """A config directory of this module's own, in force for every `decoy-lab` run in the module
    (shell_runs.shell_env: profiles there, keyring off, a wide terminal). A module whose runs need
    other settings declares its own."""
    from support.shell_runs import shell_env

    with shell_env(tmp_path_factory.mktemp("config")) as path:
        yield path
