"""Where a connection lives between sessions: one profile per name.

A profile holds the base URL, client id, token, refresh token, the agent's private key,
the key of its local vault cache (cache.py), `access_version` and the sync cursor. The non-secret part is a JSON file in the user config
directory (platformdirs; `DECOY_LAB_CONFIG_DIR` overrides it), mode 0600 in a 0700 directory.
Every directory level it creates is made 0700 one by one (never left to the umask), and a
profile is read or written only where the config is ours (`check_private`, as ssh checks its
keys): a config directory, profiles directory or profile owned by another user, or writable by
group or others, is refused with `UntrustedConfig`, which says what to run to fix it; so is a
profile that group or others may read (it may hold the agent's private key and tokens: as ssh
ignores a private key file others can read, it is not used until `chmod 600 <path>`; nothing in
it is changed or lost).
The secrets go to keyring when a working backend exists, and otherwise into the same 0600 file
(headless Linux and Binder have no backend: that fallback is quiet, never an error).

Nothing here prints a secret: `Profile.__repr__` shows fingerprints only.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from filelock import FileLock

from decoy_lab.errors import ProfileError, UntrustedConfig
from decoy_lab.secret import Secret, secret_fingerprint
from decoy_lab.store.sealed import files_beside
from decoy_lab.transport.api import Tokens

APP_NAME = "decoy-lab"
KEYRING_SERVICE = "decoy-lab"
ENV_DIR = "DECOY_LAB_CONFIG_DIR"
ENV_KEYRING = "DECOY_LAB_KEYRING"  # "0" turns keyring off, "1" insists on trying it
# the cache key lives exactly where the private key does: the cache adds no new way in
SECRET_FIELDS = ("access_token", "refresh_token", "private_key_pem", "cache_key")
LOCK_TIMEOUT = 60.0  # seconds to wait for another process refreshing the same profile's token
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


_SHAPES: dict[str, type | tuple[type, ...]] = {"str": str, "int": int, "float": (int, float)}


@dataclass
class Profile:
    """One saved connection. Secrets are fields like the rest but never shown."""

    name: str = "default"
    base_url: str = ""
    client_id: str = ""
    connection_name: str = ""
    token_id: str | None = None
    access_token: str | None = field(default=None, repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    private_key_pem: str | None = field(default=None, repr=False)
    cache_key: str | None = field(default=None, repr=False)  # base64 AES-256 key of the vault cache
    access_version: int | None = None
    cursor: str | None = None
    saved_at: float | None = None

    def public_dict(self) -> dict[str, Any]:
        """Everything but the secrets (what goes in the file when keyring holds them)."""
        return {k: v for k, v in asdict(self).items() if k not in SECRET_FIELDS}

    def secrets(self) -> dict[str, str | None]:
        return {k: getattr(self, k) for k in SECRET_FIELDS}

    def for_server(self, base_url: str) -> bool:
        """Is this a profile of the server at `base_url` (a trailing slash aside)?"""
        return self.base_url.rstrip("/") == base_url.rstrip("/")

    def __repr__(self) -> str:
        return (
            f"Profile(name={self.name!r}, base_url={self.base_url!r}, client_id={self.client_id!r}, "
            f"token={secret_fingerprint(self.access_token)}, "
            f"refresh={secret_fingerprint(self.refresh_token)}, "
            f"key={'stored' if self.private_key_pem else 'none'}, access_version={self.access_version}, "
            f"cursor={self.cursor!r})"
        )

    __str__ = __repr__


def profile_tokens(p: Profile) -> Tokens:
    """The tokens a saved profile holds (its access token must be there)."""
    assert p.access_token is not None
    return Tokens(
        access_token=Secret(p.access_token),
        refresh_token=Secret(p.refresh_token) if p.refresh_token else None,
        token_id=p.token_id,
        access_version=p.access_version,
    )


def token_fields(tokens: Tokens | None) -> dict[str, Any]:
    """What a profile keeps of `tokens` (the way back from `profile_tokens`)."""
    return {
        "token_id": tokens.token_id if tokens else None,
        "access_token": tokens.access_token.reveal() if tokens else None,
        "refresh_token": tokens.refresh_token.reveal() if tokens and tokens.refresh_token else None,
        "access_version": tokens.access_version if tokens else None,
    }


def config_dir() -> Path:
    """`DECOY_LAB_CONFIG_DIR`, or the platform's user config directory for decoy-lab."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def make_private_dirs(path: Path) -> None:
    """Make `path` and every missing directory above it, each level mode 0700 (set with chmod, so
    no umask widens or narrows it; `mkdir -p` would leave the parents to the umask: 0777 under
    umask 000). Existing levels keep their mode."""
    missing: list[Path] = []
    level = Path(path)
    while not level.is_dir():
        missing.append(level)
        if level.parent == level:
            break
        level = level.parent
    for level in reversed(missing):
        try:
            os.mkdir(level, 0o700)
        except FileExistsError:
            if not level.is_dir():
                raise ProfileError(f"{level} is a file, not a directory: the config cannot be kept there") from None
            continue
        os.chmod(level, 0o700)


def check_private(path: Path, what: str, *, secret: bool = False) -> None:
    """Refuse `path` (a config directory, profile or journal) unless it is the current user's and
    not writable by group or others — nor, when it holds `secret`s, readable by them either
    (UntrustedConfig, with the command that fixes it). The file is only looked at, never changed.
    A missing path passes (nothing to trust yet); on a system without POSIX owners nothing is
    checked. Root is refused too, as ssh refuses root's keys."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # pragma: no cover - Windows: no uid to compare
        return
    try:
        st = os.stat(path)  # a symbolic link is judged by what it points to (ssh does the same)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ProfileError(f"the {what} {path} cannot be checked: {exc.strerror or exc}") from None
    uid = getuid()
    is_dir = stat.S_ISDIR(st.st_mode)
    mode = stat.S_IMODE(st.st_mode)
    too_open = mode & (0o077 if secret else 0o022)
    if st.st_uid != uid:
        problem = f"is owned by uid {st.st_uid}, not by you (uid {uid})"
        why = "another user could have planted or changed it"
        fix = f"check who put it there; if it is yours, `chown -R {uid} {shlex.quote(str(path))}`, otherwise move it away and pair again"
    elif too_open:
        who = " and ".join(w for w, bits in (("group", 0o070), ("others", 0o007)) if too_open & bits)
        can = " and ".join(
            c for c, bits in (("readable", 0o044), ("writable", 0o022), ("executable", 0o011)) if too_open & bits
        )
        problem = f"is {can} by {who} (mode {mode:04o})"
        why = (
            "another user could have planted or changed it"
            if too_open & 0o022
            else "other users could read the agent's private key and tokens it may hold"
        )
        fix = f"`chmod {'700' if is_dir else '600'} {shlex.quote(str(path))}`"
    else:
        return
    raise UntrustedConfig(f"the {what} {path} {problem}: {why}, so it is not used. Fix: {fix}", path=str(path))


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ProfileError(
            f"profile name {name!r} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


# -- keyring, when a working backend exists ----------------------------------------------------
def working_keyring() -> Any | None:
    """The keyring module when a usable backend is configured, else None (quietly)."""
    flag = os.environ.get(ENV_KEYRING)
    if flag == "0":
        return None
    try:
        import keyring
        from keyring.backends import fail
    except Exception:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        return None
    if isinstance(backend, fail.Keyring):
        return None
    try:
        priority = float(getattr(backend, "priority", 1))
    except Exception:
        priority = 1
    if priority <= 0 and flag != "1":
        return None
    # the chainer backend with nothing behind it is as good as none
    if type(backend).__name__ == "ChainerBackend" and not getattr(backend, "backends", None):
        return None
    return keyring


class ProfileStore:
    """Reads and writes profiles: files 0600 in a 0700 directory, secrets in keyring if it works."""

    def __init__(self, directory: str | os.PathLike | None = None, *, use_keyring: bool | None = None):
        self.directory = Path(directory) if directory is not None else config_dir()
        self._use_keyring = use_keyring

    # -- paths ----------------------------------------------------------------------------
    @property
    def profiles_dir(self) -> Path:
        return self.directory / "profiles"

    def path(self, name: str) -> Path:
        return self.profiles_dir / f"{check_name(name)}.json"

    def cache_path(self, name: str) -> Path:
        """The profile's sealed vault cache (cache.py), 0600 beside the profile."""
        return self.profiles_dir / f"{check_name(name)}.cache"

    def check_trusted(self, name: str | None = None) -> None:
        """UntrustedConfig unless the config directory, the profiles directory (and the profile
        `name`, its journal and its cache) are ours and writable by us only, and the profile —
        which may hold the private key and tokens — readable by us only (see `check_private`)."""
        check_private(self.directory, "config directory")
        check_private(self.profiles_dir, "profiles directory")
        if name is not None:
            check_private(self.path(name), f"profile {name!r}", secret=True)
            check_private(self.journal_path(name), f"pending-writes journal of profile {name!r}")
            check_private(self.cache_path(name), f"vault cache of profile {name!r}")
            for kept in files_beside(self.cache_path(name)):
                check_private(kept, f"{kept.suffix[1:]} kept beside the vault cache of profile {name!r}")

    def ensure_dir(self) -> Path:
        """The profiles directory, made 0700 when missing."""
        self._ensure_dir()
        return self.profiles_dir

    def lock(self, name: str) -> FileLock:
        """A lock shared by every process using profile `name` (a token refresh holds it, so two
        notebooks on one profile never spend the same refresh token)."""
        self._ensure_dir()
        return FileLock(str(self.profiles_dir / f"{check_name(name)}.lock"), timeout=LOCK_TIMEOUT, mode=0o600)

    def journal_path(self, name: str) -> Path:
        """Where the pending writes of profile `name` are kept (journal.py): next to it, 0600."""
        return self.profiles_dir / f"{check_name(name)}.pending.json"

    def _ensure_dir(self) -> None:
        """Make the directories when missing, each level 0700; an existing config directory keeps
        its mode (it may be the user's own, shared with other tools) but must be ours and writable
        by us only, and the profiles directory is ours: 0700."""
        make_private_dirs(self.profiles_dir)
        self.check_trusted()
        os.chmod(self.profiles_dir, 0o700)

    def _keyring(self):
        if self._use_keyring is False:
            return None
        return working_keyring()

    # -- API ------------------------------------------------------------------------------
    def names(self) -> list[str]:
        if not self.profiles_dir.is_dir():
            return []
        return sorted(p.stem for p in self.profiles_dir.glob("*.json"))

    def exists(self, name: str) -> bool:
        return self.path(name).is_file()

    def save(self, profile: Profile) -> Path:
        """Write the profile atomically (0600); secrets to keyring when it works."""
        check_name(profile.name)
        self._ensure_dir()
        self.check_trusted(profile.name)
        profile.saved_at = time.time()
        data: dict[str, Any] = profile.public_dict()
        kr = self._keyring()
        stored_in_keyring = False
        if kr is not None:
            try:
                kr.set_password(KEYRING_SERVICE, profile.name, json.dumps(profile.secrets()))
                stored_in_keyring = True
            except Exception:
                stored_in_keyring = False  # a backend that fails at use: fall back quietly
        if stored_in_keyring:
            data["secrets"] = "keyring"
        else:
            data["secrets"] = "file"
            data.update(profile.secrets())
        target = self.path(profile.name)
        text = json.dumps(data, indent=2, sort_keys=True)
        del data  # it holds the tokens and the private key in the clear: no frame keeps it past here
        failed = _write_private(self.profiles_dir, target, text)
        del text
        if failed is not None:  # raised here, outside the handler: no chained error keeps the text
            raise ProfileError(f"cannot save profile {profile.name!r} in {self.profiles_dir}: {failed}")
        return target

    def load(self, name: str) -> Profile:
        path = self.path(name)
        self.check_trusted(name)  # before a byte of it is believed
        if not path.is_file():
            known = ", ".join(self.names()) or "none"
            raise ProfileError(
                f"no saved profile {name!r} in {self.profiles_dir} (saved profiles: {known}); "
                "pair first with Connection.pair(...)"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ProfileError(f"profile {name!r} at {path} cannot be read: {exc}") from None
        if not isinstance(data, dict):
            raise ProfileError(f"profile {name!r} at {path} is not a JSON object: the file is damaged")
        where = data.pop("secrets", "file")
        if where == "keyring":
            kr = self._keyring()
            raw = None
            if kr is not None:
                try:
                    raw = kr.get_password(KEYRING_SERVICE, name)
                except Exception:
                    raw = None
            if raw is None:
                raise ProfileError(f"profile {name!r} keeps its secrets in keyring, which is not available now")
            data.update(json.loads(raw))
        members = {f.name: _SHAPES[str(f.type).split(" ")[0]] for f in fields(Profile)}
        for key, value in data.items():
            if (
                key in members
                and value is not None
                and (isinstance(value, bool) or not isinstance(value, members[key]))
            ):
                raise ProfileError(f"profile {name!r} at {path}: its {key} is damaged (a {type(value).__name__})")
        return Profile(**{k: v for k, v in data.items() if k in members})

    def delete(self, name: str) -> bool:
        """Delete the profile, its secrets and its vault cache. Its pending-writes journal is left to
        whoever can say what was pending: `Connection.unpair` drops it (and says so), as does the
        next pairing of the name."""
        path = self.path(name)
        for cached in (self.cache_path(name), *files_beside(self.cache_path(name))):
            cached.unlink(missing_ok=True)
        kr = self._keyring()
        if kr is not None:
            try:
                kr.delete_password(KEYRING_SERVICE, name)
            except Exception:
                pass
        if path.is_file():
            path.unlink()
            return True
        return False

    def __repr__(self) -> str:
        return f"ProfileStore({str(self.directory)!r})"


def _write_private(directory: Path, target: Path, text: str) -> str | None:
    """Write `text` to `target` atomically, 0600; None, or why it could not be written (the
    error's frames, which hold the text, are cleared and dropped)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
        os.chmod(target, 0o600)
        return None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        traceback.clear_frames(exc.__traceback__)
        Path(tmp).unlink(missing_ok=True)
        return why
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
