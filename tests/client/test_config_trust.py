"""Whose config it is (issue 24, finding 7): the directories the project creates are 0700 level by
level (never left to the umask), and a config directory or profile that is not the current
user's, or that group or others may write, is refused with an error that says how to fix it —
as ssh refuses its keys. Tests run as root here: another owner is simulated with chown to 65534."""

from __future__ import annotations

import os
import stat
import uuid

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import ProfileError, UntrustedConfig
from decoy_lab.store.profiles import Profile, ProfileStore

OTHER_UID = 65534  # nobody
PERMS = ["memory.read", "memory.save"]


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _can_chown() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


needs_chown = pytest.mark.skipif(not _can_chown(), reason="only root can give a file to another user")


@pytest.fixture
def store(tmp_path, monkeypatch) -> ProfileStore:
    monkeypatch.setenv("DECOY_LAB_KEYRING", "0")
    return ProfileStore(tmp_path / "home" / ".config" / "decoy-lab")


def _profile(name="work") -> Profile:
    return Profile(name=name, base_url="http://127.0.0.1:1", client_id="c", access_token="AT", private_key_pem="K")


def test_every_level_the_project_creates_is_0700_even_under_umask_000(store, tmp_path):
    old = os.umask(0)
    try:
        store.save(_profile())
    finally:
        os.umask(old)
    for level in (tmp_path / "home", tmp_path / "home" / ".config", store.directory, store.profiles_dir):
        assert _mode(level) == 0o700, f"{level}: {oct(_mode(level))}"
    assert _mode(store.path("work")) == 0o600


@needs_chown
def test_a_config_directory_owned_by_another_user_is_refused(store):
    """Another user renamed ~/.config/decoy-lab and planted their own: theirs is not read."""
    store.save(_profile())
    os.chown(store.directory, OTHER_UID, OTHER_UID)
    with pytest.raises(UntrustedConfig) as caught:
        store.load("work")
    assert isinstance(caught.value, ProfileError)
    text = str(caught.value)
    assert str(store.directory) in text and f"uid {OTHER_UID}" in text and "chown" in text
    with pytest.raises(UntrustedConfig):
        store.save(_profile())  # nor written to


@needs_chown
def test_a_planted_profile_0644_of_another_user_is_refused(store):
    store.save(_profile())
    path = store.path("work")
    os.chown(path, OTHER_UID, OTHER_UID)
    os.chmod(path, 0o644)
    with pytest.raises(UntrustedConfig, match="owned by uid 65534"):
        store.load("work")


@needs_chown
def test_a_journal_of_another_user_is_refused(store):
    store.save(_profile())
    journal = store.journal_path("work")
    journal.write_text('{"pending": []}')
    os.chmod(journal, 0o600)
    os.chown(journal, OTHER_UID, OTHER_UID)
    with pytest.raises(UntrustedConfig, match="journal"):
        store.load("work")


@pytest.mark.parametrize("which", ["config", "profiles", "profile"])
def test_a_config_others_may_write_is_refused_with_the_chmod_that_fixes_it(store, which):
    store.save(_profile())
    path = {"config": store.directory, "profiles": store.profiles_dir, "profile": store.path("work")}[which]
    os.chmod(path, 0o777 if path.is_dir() else 0o666)
    with pytest.raises(UntrustedConfig) as caught:
        store.load("work")
    text = str(caught.value)
    assert "writable by group and others" in text
    assert f"chmod {'700' if path.is_dir() else '600'} {path}" in text
    os.chmod(path, 0o700 if path.is_dir() else 0o600)
    assert store.load("work").access_token == "AT"  # fixed as the message says: trusted again


def test_a_shared_config_directory_of_ours_that_only_we_write_is_fine(store):
    """An existing config directory keeps its mode when it is ours and not writable by others."""
    store.directory.mkdir(parents=True)
    os.chmod(store.directory, 0o755)
    store.save(_profile())
    assert _mode(store.directory) == 0o755 and store.load("work").base_url == "http://127.0.0.1:1"


@needs_chown
def test_decoy_lab_status_and_save_refuse_a_profile_another_user_planted(sb, store, monkeypatch, capsys):
    """`decoy-lab status` prints `error: …` and exits 2; `save` sends nothing to the planted server."""
    from decoy_lab.workbench.shell.cli import main

    Connection.pair(
        sb.url,
        name="Planted",
        profile="work",
        store=store,
        permissions=PERMS,
        on_link=lambda *a: None,
        client_id=f"planted-{uuid.uuid4().hex[:8]}",
    ).close()
    os.chown(store.directory, OTHER_UID, OTHER_UID)  # as if another user made the whole directory
    os.chown(store.profiles_dir, OTHER_UID, OTHER_UID)
    os.chown(store.path("work"), OTHER_UID, OTHER_UID)
    monkeypatch.setenv("DECOY_LAB_CONFIG_DIR", str(store.directory))
    before = len(sb.owner.app_view())
    capsys.readouterr()
    assert main(["status", "--profile", "work"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "owned by uid 65534" in err and "chown" in err
    assert main(["save", "--profile", "work", "A memory for the planted server."]) == 2
    assert "owned by uid 65534" in capsys.readouterr().err
    assert len(sb.owner.app_view()) == before, "nothing was sent"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o440], ids=oct)
def test_a_profile_others_may_read_is_refused_and_left_as_it_was(store, mode):
    """A profile holds the agent's private key and tokens: one readable by group or others (0644,
    0640 …, as an editor or `cp` under umask 022 leaves it) is refused as ssh refuses such a key —
    even for root, as here — with one line that names the file and the `chmod 600` that fixes it.
    Nothing is changed: not its bytes, not its mode; nor can a save replace it."""
    store.save(_profile())
    path = store.path("work")
    os.chmod(path, mode)
    before = path.read_bytes()
    for attempt in (lambda: store.load("work"), lambda: store.save(_profile())):
        with pytest.raises(UntrustedConfig) as caught:
            attempt()
        text = str(caught.value)
        assert "\n" not in text and str(path) in text and caught.value.path == str(path)
        assert f"`chmod 600 {path}`" in text and "readable by" in text and f"mode {mode:04o}" in text
        assert path.read_bytes() == before and _mode(path) == mode
    assert store.names() == ["work"]
    os.chmod(path, 0o600)  # as the message says
    loaded = store.load("work")
    assert (loaded.access_token, loaded.private_key_pem) == ("AT", "K")


def test_a_profile_only_we_may_read_is_used(store):
    """0600 (what `save` writes) and 0400 (a user who made it read-only) are fine."""
    store.save(_profile())
    for mode in (0o600, 0o400):
        os.chmod(store.path("work"), mode)
        assert store.load("work").private_key_pem == "K"
