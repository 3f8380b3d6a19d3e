"""The client side: `http`, `profiles`, pairing, `Connection` and its vault, mostly against the sandbox over
real HTTP. Legacy space rows have a folder (and fixtures) of their own."""

from __future__ import annotations

import pytest

from decoy_lab.store.profiles import ProfileStore


@pytest.fixture
def store(tmp_path, monkeypatch) -> ProfileStore:
    """Profiles in a folder of the test's own, secrets in files there (the keyring off). A module
    that needs another place (a config dir under a home, say) declares its own."""
    monkeypatch.setenv("DECOY_LAB_KEYRING", "0")
    return ProfileStore(tmp_path / "cfg")
