"""Parsing a command line against the verb table; it never exits: a mistake is a `UsageProblem`
that names the verb, says what was wrong in one line and suggests the closest word.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable, Sequence

from decoy_lab.errors import DecoyError
from decoy_lab.recipes.account_records import FIELD_TYPES
from decoy_lab.workbench.verbs.table import (
    ADDRESS_STATUSES,
    BY_NAME,
    DUMP_KINDS,
    NOTEBOOK,
    ON_OFF,
    PROMPT,
    SET_STATUSES,
    SHELL,
    Verb,
    verbs_for,
)


class UsageProblem(DecoyError, ValueError):
    """A mistake in a command line: `message` is one line, `usage` the verb's one-line usage
    (empty when the verb itself is unknown) and `suggestion` the closest word, if any."""

    def __init__(self, message: str, *, verb: str | None = None, usage: str = "", suggestion: str | None = None):
        super().__init__(message)
        self.verb, self.usage, self.suggestion = verb, usage, suggestion


def closest(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The choice nearest to `word` (any case), or None when nothing is near."""
    choices = [c for c in dict.fromkeys(choices) if c]
    by_fold = {c.casefold(): c for c in choices}
    got = difflib.get_close_matches(word.casefold(), list(by_fold), n=1, cutoff=cutoff)
    if got:
        return by_fold[got[0]]
    prefixed = [c for c in choices if c.casefold().startswith(word.casefold())]
    return prefixed[0] if len(prefixed) == 1 else None


class _Raising(argparse.ArgumentParser):
    """argparse that raises UsageProblem (one line) instead of printing and exiting."""

    verb: Verb | None = None
    front: str = NOTEBOOK

    def error(self, message: str) -> None:  # type: ignore[override]
        verb = self.verb
        m = re.match(r"unrecognized arguments: (\S+)", message)
        hint = None
        if m and verb is not None and m.group(1).startswith("-"):
            hint = closest(m.group(1), verb.flags(self.front))
        if hint:
            message = f"unknown option {m.group(1)!r} — did you mean {hint!r}?"  # type: ignore[union-attr]
        raise UsageProblem(
            message, verb=verb.name if verb else None, usage=verb.usage(self.front) if verb else "", suggestion=hint
        )

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise _HelpShown()


class _HelpShown(Exception):
    """`-h` printed the verb's help."""


def add_arguments(parser: argparse.ArgumentParser, verb: Verb, front: str) -> argparse.ArgumentParser:
    for arg in verb.args_for(front):
        parser.add_argument(arg.name, **arg.options(front))
    return parser


def parse(words: Sequence[str], front: str = NOTEBOOK) -> tuple[Verb, argparse.Namespace] | None:
    """The verb and its arguments from a split command line; None when `-h` printed a help.
    A mistake raises UsageProblem."""
    if not words:
        raise UsageProblem(f"needs a sub-command — {PROMPT[front]} help lists them")
    verb = find_verb(words[0], front)
    parser = _Raising(prog=f"{PROMPT[front]} {verb.name}", add_help=True)
    parser.verb, parser.front = verb, front
    add_arguments(parser, verb, front)
    try:
        args = parser.parse_args(list(words[1:]))
    except _HelpShown:
        return None
    check(verb, args, front)
    return verb, args


def find_verb(word: str, front: str = NOTEBOOK) -> Verb:
    names = {v.name: v for v in verbs_for(front)}
    for v in verbs_for(front):
        if front == SHELL:
            names.update(dict.fromkeys(v.aliases, v))
    if word in names:
        return names[word]
    near = closest(word, [v.name for v in verbs_for(front)])
    if near:
        raise UsageProblem(
            f"unknown sub-command {word!r} — did you mean {near!r}?", usage=BY_NAME[near].usage(front), suggestion=near
        )
    raise UsageProblem(f"unknown sub-command {word!r} — {PROMPT[front]} help lists them")


def _not_one_of(flag: str, value: str, choices: Sequence[str], verb: Verb, front: str) -> UsageProblem:
    """`flag`'s `value` is none of `choices`: say which they are, and the closest as the suggestion."""
    near = closest(value, choices)
    return UsageProblem(
        f"{flag} is one of {', '.join(choices)}" + (f" — did you mean {near!r}?" if near else ""),
        verb=verb.name,
        usage=verb.usage(front),
        suggestion=near,
    )


def check(verb: Verb, args: argparse.Namespace, front: str = NOTEBOOK) -> None:
    """What argparse cannot say: a negative depth, a layout name, field type or status that does
    not exist, an address update that changes nothing (the usage in `front`'s words)."""
    if verb.name == "map" and args.depth is not None and args.depth < 0:
        raise UsageProblem("--depth must be 0 or more", verb="map", usage=verb.usage(front))
    if verb.name == "decoys" and args.status not in ADDRESS_STATUSES:
        raise _not_one_of("--status", args.status, ADDRESS_STATUSES, verb, front)
    if verb.name == "dump" and args.kind is not None and args.kind not in DUMP_KINDS:
        raise _not_one_of("--kind", args.kind, DUMP_KINDS, verb, front)
    if verb.name == "field-add" and args.type not in FIELD_TYPES:
        raise _not_one_of("--type", args.type, FIELD_TYPES, verb, front)
    if verb.name == "decoy-update":
        if args.status is not None and args.status not in SET_STATUSES:
            raise _not_one_of("--status", args.status, SET_STATUSES, verb, front)
        if args.label is not None and args.clear_label:
            raise UsageProblem("give --label TEXT or --clear-label, not both", verb=verb.name, usage=verb.usage(front))
        if args.label is None and not args.clear_label and args.status is None:
            raise UsageProblem(
                "say what changes: --label TEXT, --clear-label or --status", verb=verb.name, usage=verb.usage(front)
            )
    if verb.name == "account-update":
        _check_account_update(verb, args, front)


def _check_account_update(verb: Verb, args: argparse.Namespace, front: str) -> None:
    """account-update changes something, and a record it re-seals has its name: the server cannot
    open the record to change one key of it, so the record is sealed whole from what is given."""
    if args.status is not None and args.status not in SET_STATUSES:
        raise _not_one_of("--status", args.status, SET_STATUSES, verb, front)
    if args.two_factor is not None and args.two_factor not in ON_OFF:
        raise _not_one_of("--two-factor", args.two_factor, ON_OFF, verb, front)
    if (args.url is not None or args.username is not None) and args.service is None:
        raise UsageProblem(
            "--url and --username go into the record, which is re-sealed whole: give --service NAME too",
            verb=verb.name,
            usage=verb.usage(front),
        )
    if args.label is not None and args.clear_label:
        raise UsageProblem("give --label TEXT or --clear-label, not both", verb=verb.name, usage=verb.usage(front))
    if all(getattr(args, k) is None for k in ("service", "label", "status", "two_factor")) and not args.clear_label:
        raise UsageProblem(
            "say what changes: --service (with --url, --username), --label, --clear-label, --status or --two-factor",
            verb=verb.name,
            usage=verb.usage(front),
        )
