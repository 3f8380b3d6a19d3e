"""Secrets at rest (issue 24, finding 4): every file the sandbox and the client leave behind that
holds key material — the sandbox database and its `-wal`/`-shm` (the simulated owner's private
key), the profile (tokens, the agent key, the cache key), its cache and its journal — is 0600 from
its creation, in 0700 directories, also under `umask 000`."""

from __future__ import annotations

import base64
import os
import stat
import uuid
from pathlib import Path

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.stores.db import Store
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.wire.crypto import AgentKey

PERMS = ["memory.read", "memory.save", "memory.edit", "memory.delete"]


def _der(pem: str) -> bytes:
    return base64.b64decode("".join(line for line in pem.splitlines() if line and not line.startswith("-----")))


def _tree(root: Path) -> tuple[list[Path], list[Path]]:
    files, dirs = [], []
    for top, dirnames, filenames in os.walk(root):
        dirs.extend(Path(top) / d for d in dirnames)
        files.extend(Path(top) / f for f in filenames)
    return files, dirs


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def umask_of(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


@pytest.mark.parametrize("umask_of", [0o022, 0o000], indirect=True, ids=["umask022", "umask000"])
def test_every_file_left_with_key_material_is_0600_in_0700_directories(tmp_path, monkeypatch, umask_of):
    """Run a sandbox with its database under tmp, pair, save, load with the cache, leave a write
    pending, stop: then scan every file left for PEM markers, the tokens and the raw keys."""
    monkeypatch.setenv("DECOY_LAB_KEYRING", "0")
    home = tmp_path / "home"
    os.mkdir(home, 0o700)  # the test's own root; every level below it is the project's
    os.chmod(home, 0o700)
    os.mkdir(home / "sandbox", 0o700)  # the --db directory the user gave
    os.chmod(home / "sandbox", 0o700)
    owner = AgentKey.generate()
    sb = Sandbox.start(owner_key=owner.to_pem(), seed="none", db=str(home / "sandbox" / "sandbox.sqlite3"))
    sb.state.device_interval = 0
    store = ProfileStore(home / ".config" / "decoy-lab")  # neither level exists yet
    scans: list[tuple[str, dict[Path, bytes], dict[Path, int]]] = []
    files_modes: dict[str, dict[Path, int]] = {}

    def scan(when: str) -> None:
        files, dirs = _tree(home)
        scans.append((when, {f: f.read_bytes() for f in files}, {d: _mode(d) for d in dirs}))
        files_modes[when] = {f: _mode(f) for f in files}

    try:
        conn = Connection.pair(
            sb.url,
            name="At rest",
            profile="work",
            store=store,
            permissions=PERMS,
            on_link=lambda *a: None,
            client_id=f"rest-{uuid.uuid4().hex[:8]}",
            retries=1,
            backoff=0,
            sleep=lambda s: None,
        )
        conn.save("Keeps the spare key under the mat.")
        conn.load()
        conn.load()  # the second load reads the sealed cache
        sb.state.faults.configure({"drop_after_commit": 1.0})
        with pytest.raises(OutcomeUnknown):
            conn.save("Left pending in the journal.")
        sb.state.faults.configure({})
        conn.close()
        scan("while the sandbox runs")
    finally:
        sb.stop()
    scan("after the sandbox stopped")
    saved = store.load("work")
    secrets: dict[str, bytes] = {
        "PEM marker": b"-----BEGIN",
        "owner key (DER)": _der(owner.to_pem())[:64],
        "agent key (DER)": _der(saved.private_key_pem or "")[:64],
        "access token": (saved.access_token or "").encode(),
        "refresh token": (saved.refresh_token or "").encode(),
        "cache key": (saved.cache_key or "").encode(),
        "cache key (raw)": base64.b64decode(saved.cache_key or ""),
    }
    assert all(secrets.values()), "every secret to look for is known"
    for when, files, dirs in scans:
        holding: dict[Path, list[str]] = {}
        for f, data in files.items():
            found = [name for name, needle in secrets.items() if needle in data]
            if found:
                holding[f] = found
        names = {f.name for f in files}
        assert {"sandbox.sqlite3", "work.json", "work.cache", "work.pending.json"} <= names, sorted(names)
        assert any(f.name.startswith("sandbox.sqlite3") for f in holding), "the owner key is found in the database"
        assert home / ".config" / "decoy-lab" / "profiles" / "work.json" in holding
        loose = {
            str(f.relative_to(home)): (oct(m), holding[f])
            for f, m in files_modes[when].items()
            if f in holding and m != 0o600
        }
        assert not loose, f"{when}: files holding key material not 0600: {loose}"
        loose_any = {str(f.relative_to(home)): oct(m) for f, m in files_modes[when].items() if m & 0o077}
        assert not loose_any, f"{when}: files others may read: {loose_any}"
        open_dirs = {str(d.relative_to(home)): oct(m) for d, m in dirs.items() if m != 0o700}
        assert not open_dirs, f"{when}: directories not 0700: {open_dirs}"


def test_the_database_and_its_wal_and_shm_are_0600_before_the_owner_key_is_written(tmp_path):
    """Under umask 000 too, and in a directory the store makes (0700 each level): the `-wal` holds
    the owner's PEM before any checkpoint, and stays after the sandbox stops."""
    old = os.umask(0)
    try:
        path = tmp_path / "data" / "decoy-lab" / "sandbox.sqlite3"
        store = Store(str(path))
        with store.tx() as con:
            con.execute("INSERT INTO sandbox_meta (key, value) VALUES ('owner_key', '-----BEGIN PRIVATE KEY-----')")
        left = {p.name: oct(_mode(p)) for p in path.parent.iterdir()}
        assert {"sandbox.sqlite3", "sandbox.sqlite3-wal", "sandbox.sqlite3-shm"} <= set(left)
        assert all(mode == "0o600" for mode in left.values()), left
        assert b"BEGIN PRIVATE KEY" in (path.parent / "sandbox.sqlite3-wal").read_bytes()
        assert _mode(path.parent) == 0o700 and _mode(path.parent.parent) == 0o700
        store.close()
    finally:
        os.umask(old)


def test_an_existing_database_left_0644_by_an_older_sandbox_is_narrowed_with_its_wal(tmp_path):
    path = tmp_path / "old.sqlite3"
    Store(str(path)).close()
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        p.touch()
        os.chmod(p, 0o644)
    store = Store(str(path))
    assert all(_mode(Path(str(path) + s)) == 0o600 for s in ("", "-wal", "-shm"))
    store.close()


def test_a_file_that_is_not_sqlite_is_refused_and_left_as_it_was(tmp_path):
    import sqlite3

    path = tmp_path / "notes.txt"
    path.write_bytes(b"not a database at all, just some notes " * 200)
    os.chmod(path, 0o644)
    with pytest.raises(sqlite3.DatabaseError):
        Store(str(path))
    assert _mode(path) == 0o644 and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
