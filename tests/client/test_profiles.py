"""Profiles: files 0600 in a 0700 directory, secrets in keyring when one works, never in a repr."""

from __future__ import annotations

import json
import os
import stat

import pytest

from decoy_lab.store import profiles
from decoy_lab.store.profiles import Profile, ProfileError, ProfileStore

SECRETS = {
    "access_token": "at-VERY-SECRET",
    "refresh_token": "rt-VERY-SECRET",
    "private_key_pem": "-----BEGIN PRIVATE KEY-----\nPEM-VERY-SECRET\n-----END PRIVATE KEY-----\n",
}


def sample(name: str = "default") -> Profile:
    return Profile(
        name=name,
        base_url="http://127.0.0.1:8787",
        client_id="decoy-lab",
        connection_name="Notebook",
        token_id="tok-1",
        access_version=3,
        cursor="17",
        **SECRETS,
    )


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_round_trip_with_file_secrets_and_modes(tmp_path):
    """ "files 0600 in a 0700 directory"."""
    store = ProfileStore(tmp_path / "cfg", use_keyring=False)
    path = store.save(sample())
    assert mode(path) == 0o600
    assert mode(tmp_path / "cfg") == 0o700 and mode(tmp_path / "cfg" / "profiles") == 0o700
    back = store.load("default")
    assert back.access_token == SECRETS["access_token"] and back.private_key_pem == SECRETS["private_key_pem"]
    assert (back.base_url, back.access_version, back.cursor, back.token_id) == (
        "http://127.0.0.1:8787",
        3,
        "17",
        "tok-1",
    )
    assert store.names() == ["default"]


def test_saving_again_keeps_the_mode_even_under_a_loose_umask(tmp_path):
    store = ProfileStore(tmp_path, use_keyring=False)
    old = os.umask(0)
    try:
        store.save(sample())
        path = store.save(sample())
    finally:
        os.umask(old)
    assert mode(path) == 0o600 and mode(tmp_path / "profiles") == 0o700
    assert not [p for p in (tmp_path / "profiles").iterdir() if p.suffix == ".tmp"]


def test_env_override_picks_the_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("DECOY_LAB_CONFIG_DIR", str(tmp_path / "elsewhere"))
    assert ProfileStore().directory == tmp_path / "elsewhere"


def test_repr_shows_fingerprints_not_secrets():
    text = repr(sample()) + str(sample())
    for secret in SECRETS.values():
        assert secret not in text
    assert "PEM-VERY-SECRET" not in text
    assert profiles.secret_fingerprint("at-VERY-SECRET") in text


def test_bad_and_missing_names_are_clear_errors(tmp_path):
    store = ProfileStore(tmp_path, use_keyring=False)
    with pytest.raises(ProfileError, match="profile name"):
        store.save(sample("../evil"))
    with pytest.raises(ProfileError, match="no saved profile 'work'"):
        store.load("work")


class MemoryKeyring:
    """A working keyring backend held in a dict."""

    def __init__(self) -> None:
        self.data: dict = {}

    def set_password(self, service, user, value):
        self.data[(service, user)] = value

    def get_password(self, service, user):
        return self.data.get((service, user))

    def delete_password(self, service, user):
        self.data.pop((service, user), None)


def test_secrets_go_to_keyring_when_one_works(tmp_path, monkeypatch):
    kr = MemoryKeyring()
    monkeypatch.setattr(profiles, "working_keyring", lambda: kr)
    store = ProfileStore(tmp_path)
    path = store.save(sample())
    on_disk = path.read_text()
    for secret in SECRETS.values():
        assert secret not in on_disk
    assert json.loads(on_disk)["secrets"] == "keyring"
    assert store.load("default").refresh_token == SECRETS["refresh_token"]
    store.delete("default")
    assert kr.data == {} and not path.exists()


def test_a_broken_keyring_falls_back_to_the_file_quietly(tmp_path, monkeypatch):
    class Broken(MemoryKeyring):
        def set_password(self, service, user, value):
            raise RuntimeError("no D-Bus session")

    monkeypatch.setattr(profiles, "working_keyring", lambda: Broken())
    path = ProfileStore(tmp_path).save(sample())
    data = json.loads(path.read_text())
    assert data["secrets"] == "file" and data["access_token"] == SECRETS["access_token"]
    assert mode(path) == 0o600


def test_headless_keyring_detection_is_quiet(monkeypatch):
    """Headless Linux and Binder have no backend: detection returns None, never raises."""
    import keyring
    from keyring.backends import fail

    monkeypatch.setattr(keyring, "get_keyring", lambda: fail.Keyring())
    assert profiles.working_keyring() is None
    monkeypatch.setenv("DECOY_LAB_KEYRING", "0")
    monkeypatch.setattr(keyring, "get_keyring", lambda: MemoryKeyring())
    assert profiles.working_keyring() is None
