"""The translations both front ends share: what `save` and `edit` send, the key `dump` opens
with, the hint that answers an error and the "did you mean" for a value typed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from decoy_lab.errors import (
    APIError,
    DecoyError,
    InsufficientGrant,
    ProfileError,
    ServerError,
    TokenError,
    TransportError,
)
from decoy_lab.vocab import USER_NAMES
from decoy_lab.workbench.verbs.parsing import UsageProblem, closest
from decoy_lab.workbench.verbs.table import BY_NAME, NOTEBOOK, PROMPT, SHELL, Verb


def connect_url(args: argparse.Namespace) -> str | None:
    return args.url or args.url_option


def topic_value(name: str | None) -> str | None:
    """A topic as `edit` sends it: None for You, else the name or topic:<id>."""
    if name is None:
        return None
    return None if name.strip().lower() in USER_NAMES else name


def save_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of `Connection.save` that `save`'s flags mean."""
    kw: dict[str, Any] = {"topic": args.topic, "categories": list(args.categories or [])}
    if args.type:
        kw["topic_type"] = args.type
    if args.relation or args.parent:
        kw["link"] = {"relation_type": args.relation, "topic": args.parent}
    return kw


def edit_changes(args: argparse.Namespace, text: str | None, front: str = NOTEBOOK) -> dict[str, Any]:
    """The keyword arguments of `Connection.edit`; a UsageProblem, in `front`'s words, when
    nothing changes."""
    changes: dict[str, Any] = {}
    if text:
        changes["text"] = text
    if args.topic is not None:
        changes["topic"] = topic_value(args.topic)
    if args.categories is not None:
        changes["categories"] = list(args.categories)
    if not changes:
        how = {
            NOTEBOOK: "--text, --topic or --categories, or the new text as the %%decoy edit cell body",
            SHELL: "--text (- reads stdin), --topic or --categories",
        }[front]
        raise UsageProblem(f"say what changes: {how}", verb="edit", usage=BY_NAME["edit"].usage(front))
    return changes


def dump_key(args: argparse.Namespace) -> tuple[str | None, Path | None]:
    """(base64 key, PEM file) from `--key` (a key, or a file that exists) and `--key-file`; a
    file that cannot be read as text or holds no PEM block is a DecoyError naming it."""
    path = Path(args.key_file or args.key or "").expanduser()
    if not args.key_file and not (args.key and path.is_file()):
        return args.key, None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise DecoyError(f"the key file {path} cannot be read as a PEM file ({why})") from None
    if "-----BEGIN " not in text:
        raise DecoyError(f"the key file {path} holds no PEM block (-----BEGIN … PRIVATE KEY-----)")
    return None, path


# The Python spellings the library's messages use, and what a person types in each front end.
PYTHON_WORDS: tuple[tuple[str, dict[str, str]], ...] = (
    ("Connection.pair(...)", {NOTEBOOK: "%decoy connect URL", SHELL: "decoy-lab connect URL"}),
    ("conn.resend()", {NOTEBOOK: "%decoy resend", SHELL: "decoy-lab resend"}),
    ("pass force=True (--force)", {NOTEBOOK: "pass --force", SHELL: "pass --force"}),
    (
        "Run create_account again with idempotency_key=",
        {
            NOTEBOOK: "Run %decoy account-new again with --idempotency-key ",
            SHELL: "Run decoy-lab account-new again with --idempotency-key ",
        },
    ),
    (
        "with create_account instead",
        {NOTEBOOK: "with %decoy account-new instead", SHELL: "with decoy-lab account-new instead"},
    ),
)


def front_words(text: str, front: str) -> str:
    """An error's message in the front end's words: `decoy-lab connect URL` in a shell where the
    library says `Connection.pair(...)`."""
    for python, typed in PYTHON_WORDS:
        text = text.replace(python, typed[front])
    return text


def hint(exc: DecoyError, front: str, *, verb: str | None = None, profile: str | None = None) -> str | None:
    """The command that answers an error, in the front end's words (None when there is none)."""
    p = PROMPT[front]
    flag = f" --profile {profile}" if profile and profile != "default" else ""
    again = "%decoy connect --sandbox (or %decoy connect URL)" if front == NOTEBOOK else f"decoy-lab connect URL{flag}"
    if isinstance(exc, ProfileError) and front == SHELL:
        from decoy_lab.store.profiles import ProfileStore, check_name

        try:
            missing = not ProfileStore().exists(check_name(profile or "default"))
        except DecoyError:
            return None  # a bad name: the message says what a name may hold
        return f"pair first: {again}" if missing else None
    if isinstance(exc, TokenError) and (exc.recovery == "re_pair" or exc.code == "TOKEN_REVOKED"):
        return f"this connection needs a new pairing: {again}"
    if isinstance(exc, APIError) and exc.code == "ACCOUNT_EMAIL_GOES_WITH_ACCOUNT" and verb == "protect":
        # 001: "An account's current Decoy email is never replaced this way" — it keeps the one it has
        return (
            f"the account keeps the Decoy email it has: {p} protect ACCOUNT{flag} (no --decoy) answers "
            "already_protected, and the address you named stays free for another account"
        )
    if isinstance(exc, APIError) and exc.code == "ACCOUNT_EMAIL_GOES_WITH_ACCOUNT":
        # 001: "An account's own Decoy email is never burned, replaced or rotated by an agent: it goes
        # only with its account" — a code with no ask.
        return (
            f"an account's own Decoy email goes only with its account: {p} account-delete ACCOUNT{flag} deletes "
            f"both (it needs account.delete); {p} decoy-update DECOY --status inactive{flag} pauses the address instead"
        )
    if isinstance(exc, InsufficientGrant) and exc.required_permission:
        return f'ask the owner for it: {p} request {exc.required_permission} --reason "…"{flag}'
    if verb == "unpair" and isinstance(exc, (TransportError, ServerError)):
        return f"the profile was kept: run {p} unpair{flag} again, or forget it here only with --local"
    return None


def value_suggestion(
    exc: BaseException, verb: Verb, args: argparse.Namespace, sources: Mapping[str, Callable[[], Iterable[str]]]
) -> str | None:
    """ "did you mean …" for an error about a value the user typed (a topic name, a category, an
    id): the closest of what `sources[kind]()` lists, when the message names that value."""
    text = str(exc)
    for arg in verb.args:
        source = sources.get(arg.completes or "")
        value = getattr(args, (arg.dest or arg.name.lstrip("-")).replace("-", "_"), None)
        for one in value if isinstance(value, list) else [value]:
            if source is None or not isinstance(one, str) or not one or one not in text:
                continue
            near = closest(one, source(), cutoff=0.5)
            if near and near != one:
                return f"did you mean {near!r}?"
    return None
