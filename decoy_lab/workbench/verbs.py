"""The workbench's verbs, declared once for the notebook (`%decoy …`) and the shell (`decoy-lab …`).

Each `Verb` lists its arguments (`Arg`), the front ends that have it, and says its own one-line
usage; the translations both front ends share live here too (what `save` and `edit` send, the
hint that answers an error, the closest name to a typo, what Tab offers). `magics.py` and
`commands.py` build their parsers from this table and only render. Nothing here imports
IPython, and parsing never exits: a mistake is a `UsageProblem` that names the verb, says what
was wrong in one line and suggests the closest word.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from decoy_lab.errors import DecoyError, InsufficientGrant, ProfileError, ServerError, TokenError, TransportError
from decoy_lab.vocab import PERMISSIONS as PERMISSION_TABLE
from decoy_lab.vocab import USER_NAMES

NOTEBOOK, SHELL = "notebook", "shell"
BOTH = frozenset({NOTEBOOK, SHELL})
ONLY_NOTEBOOK, ONLY_SHELL = frozenset({NOTEBOOK}), frozenset({SHELL})
PROMPT = {NOTEBOOK: "%decoy", SHELL: "decoy-lab"}

# name -> (what the owner sees, its Needs), from the spec's permission table (vocab.PERMISSIONS)
PERMISSIONS: dict[str, tuple[str, tuple[str, ...]]] = {name: (sees, needs) for name, sees, needs in PERMISSION_TABLE}


class UsageProblem(DecoyError, ValueError):
    """A mistake in a command line: `message` is one line, `usage` the verb's one-line usage
    (empty when the verb itself is unknown) and `suggestion` the closest word, if any."""

    def __init__(self, message: str, *, verb: str | None = None, usage: str = "", suggestion: str | None = None):
        super().__init__(message)
        self.verb, self.usage, self.suggestion = verb, usage, suggestion


@dataclass(frozen=True)
class Arg:
    """One argument: `name` is `--flag` or a positional's name; `completes` says what Tab offers
    for its value (topic, category, id, permission, file)."""

    name: str
    help: str = ""
    nargs: str | None = None
    flag: bool = False
    type: Callable[[str], Any] | None = None
    default: Any = None
    metavar: str | None = None
    dest: str | None = None
    fronts: frozenset[str] = BOTH
    completes: str | None = None
    shown: bool = True  # listed in the one-line usage (an alternative spelling is not)

    @property
    def positional(self) -> bool:
        return not self.name.startswith("-")

    def options(self) -> dict[str, Any]:
        """The argparse options that declare it."""
        if self.flag:
            return {"action": "store_true", "help": self.help, **({"dest": self.dest} if self.dest else {})}
        out: dict[str, Any] = {"help": self.help, "default": self.default}
        for key in ("nargs", "type", "metavar", "dest"):
            value = getattr(self, key)
            if value is not None and not (key == "dest" and self.positional):
                out[key] = value
        return out

    def usage(self) -> str:
        meta = self.metavar or (self.name.upper() if self.positional else self.name.lstrip("-").upper()[:1])
        if self.flag:
            return f"[{self.name}]"
        value = {"+": f"{meta} ...", "*": f"[{meta} ...]", "?": f"[{meta}]"}.get(self.nargs or "", meta)
        return value if self.positional else f"[{self.name} {value}]"


@dataclass(frozen=True)
class Verb:
    name: str
    summary: str
    args: tuple[Arg, ...] = ()
    fronts: frozenset[str] = BOTH
    aliases: tuple[str, ...] = ()  # other names the shell also takes
    cell: str = ""  # what a `%%decoy` cell body is for this verb ("" = no cell body)
    extra: Mapping[str, str] = field(default_factory=dict)  # a note after the usage, per front end

    def args_for(self, front: str) -> list[Arg]:
        return [a for a in self.args if front in a.fronts]

    def usage(self, front: str = NOTEBOOK) -> str:
        """One line: the prompt, the verb and its arguments."""
        prefix = "%%decoy" if front == NOTEBOOK and self.cell and self.name == "save" else PROMPT[front]
        return " ".join([prefix, self.name, *(a.usage() for a in self.args_for(front) if a.shown)])

    def flags(self, front: str) -> list[str]:
        return [a.name for a in self.args_for(front) if not a.positional]


_TOPIC = Arg("--topic", "a topic name or topic:<id> ('You' for memories about you)", metavar="T", completes="topic")
_CATS = Arg("--categories", "categories (none: remove them all)", nargs="*", metavar="C", completes="category")
_REVEAL = Arg("--reveal", "show raw keys instead of fingerprints", flag=True)
_PROFILE = Arg("--profile", "the saved connection to use", metavar="P")
_JSON = Arg("--json", "print machine-readable JSON instead of a table", flag=True, fronts=ONLY_SHELL)
_WAIT_ROWS = Arg(
    "--wait", "if rows are on their way, wait as long as the server says (at most 90 s), then read again", flag=True
)

VERBS: tuple[Verb, ...] = (
    Verb(
        "connect",
        "pair with a Decoy server (the notebook's widget never blocks the kernel)",
        (
            Arg("url", "the server's base URL, e.g. http://127.0.0.1:8787", nargs="?", metavar="URL"),
            Arg("--url", "the server's base URL (same as URL)", dest="url_option", metavar="URL", shown=False),
            Arg("--sandbox", "start the embedded sandbox and pair with it", flag=True, fronts=ONLY_NOTEBOOK),
            _PROFILE,
            Arg("--name", "the name the owner sees when approving", metavar="N"),
            Arg(
                "--permission",
                "permissions to ask for (default memory.read and memory.save)",
                nargs="+",
                dest="permissions",
                metavar="P",
                completes="permission",
            ),
            Arg("--new", "pair another connection even when one is live for this profile", flag=True),
            Arg("--force", "replace a saved profile that holds a connection to another server", flag=True),
            Arg("--timeout", "seconds to wait for the owner's approval (default 600)", type=float, metavar="S"),
        ),
        aliases=("pair",),
    ),
    Verb("connections", "the connections of this notebook (the current one marked) or the saved profiles"),
    Verb(
        "unpair",
        "end a connection at the server and delete its saved profile",
        (
            Arg("which", "a number or token id from `connections`", nargs="?", metavar="N", fronts=ONLY_NOTEBOOK),
            _PROFILE,
            Arg("--local", "only delete the profile here (the server is unreachable)", flag=True),
        ),
    ),
    Verb("status", "the connection and what it may do (the consent card)", (_JSON,)),
    Verb("access", "what the connection holds now, permission by permission", (_JSON,)),
    Verb(
        "request",
        "ask the owner for more access on this same connection",
        (
            Arg("permissions", "permission names, e.g. memory.edit", nargs="+", metavar="PERM", completes="permission"),
            Arg("--datatypes", "only these categories", nargs="+", metavar="C", completes="category"),
            Arg("--topic", "only memories about this topic", metavar="T", completes="topic"),
            Arg("--reason", "why, in words the owner reads", default="", metavar="TEXT"),
            Arg("--wait", "wait for the owner's answer (exit 1 unless granted)", flag=True, fronts=ONLY_SHELL),
            Arg("--timeout", "seconds --wait waits", type=float, default=600.0, metavar="S", fronts=ONLY_SHELL),
            Arg("--interval", "seconds between checks", type=float, default=3.0, metavar="S", fronts=ONLY_SHELL),
            _JSON,
        ),
    ),
    Verb(
        "memories",
        "the memories this connection can read",
        (
            _TOPIC,
            Arg("--category", "only this category", metavar="C", completes="category"),
            Arg("--search", "only memories whose text contains TEXT (any case)", metavar="TEXT"),
            Arg("--mine", "only memories this connection wrote", flag=True),
            Arg("--all", "show every column (the returned frame always has them all)", flag=True, fronts=ONLY_NOTEBOOK),
            _WAIT_ROWS,
            _JSON,
        ),
    ),
    Verb("topics", "the topics, with their memory counts", (_JSON,)),
    Verb("links", "relations between You and topics", (_JSON,)),
    Verb("rows", "every served row, readable or not, with reasons", (_JSON,)),
    Verb(
        "map",
        "the topic map: You at the centre, topics by type and size",
        (_TOPIC, Arg("--depth", "how many rings", type=int, metavar="N"), Arg("--category", metavar="C")),
        fronts=ONLY_NOTEBOOK,
    ),
    Verb("browse", "the memory browser and the map as two views of one vault", fronts=ONLY_NOTEBOOK),
    Verb(
        "unseal",
        "re-run the read of one row step by step",
        (Arg("id", "a memory or row id", metavar="ID", completes="id"), _REVEAL),
    ),
    Verb(
        "seal",
        "seal a memory step by step without sending it (a dry run)",
        (Arg("text", "the memory text (- reads stdin)", nargs="+", metavar="TEXT"), _TOPIC, _CATS, _REVEAL),
    ),
    Verb(
        "save",
        "save a memory; gives its new id",
        (
            Arg("text", "the memory text (- reads stdin; in a notebook, or the cell body)", nargs="*", metavar="TEXT"),
            _TOPIC,
            Arg("--type", "the type of a new topic (trip, person, project, …)", default="", metavar="TYPE"),
            Arg("--relation", "how a new topic relates (e.g. 'is planning')", metavar="R"),
            Arg("--parent", "nest a new topic under this one", metavar="TOPIC", completes="topic"),
            _CATS,
        ),
        cell="the memory text",
    ),
    Verb(
        "edit",
        "edit a memory in place (removing a label rotates its key)",
        (
            Arg("id", "the memory id", metavar="ID", completes="id"),
            Arg("--text", "the new text (- reads stdin)", metavar="TEXT"),
            _TOPIC,
            Arg(
                "--categories",
                "the new categories (none: remove them all)",
                nargs="*",
                metavar="C",
                completes="category",
            ),
            _JSON,
        ),
        cell="the new text",
    ),
    Verb(
        "delete",
        "delete memories, topic rows or legacy space rows",
        (Arg("ids", "ids to delete", nargs="+", metavar="ID", completes="id"), _JSON),
    ),
    Verb("sync", "follow the change cursor; reload only what changed", (_JSON,)),
    Verb(
        "resend",
        "send the writes whose outcome is unknown again, with the same sealed rows",
        (Arg("--list", "only list what is pending", flag=True, dest="list_only"), _JSON),
    ),
    Verb(
        "cache",
        "where the profile's sealed vault cache is and how large",
        (_PROFILE, Arg("--clear", "remove it (the next load opens every row afresh)", flag=True)),
    ),
    Verb(
        "dump",
        "any base64 blob, annotated field by field; opened when a key fits",
        (
            Arg("blob", "standard base64 text (- reads stdin)", metavar="BLOB"),
            Arg("--kind", "the layout, when it cannot be told apart", metavar="KIND"),
            Arg("--key", "a base64 memory key, or a PEM private key file", metavar="KEY", completes="file"),
            Arg("--key-file", "a PEM private key file", metavar="PEM", completes="file"),
            Arg("--owner", "open with the sandbox owner's key", flag=True, fronts=ONLY_NOTEBOOK),
            _REVEAL,
        ),
    ),
    Verb(
        "app-view",
        "sandbox only: every row as the owner's app sees it",
        (Arg("url", "the sandbox URL (default: the profile's server)", nargs="?", metavar="URL"), _JSON),
        fronts=ONLY_SHELL,
    ),
    Verb("help", "every sub-command, one line each", fronts=ONLY_NOTEBOOK),
)

BY_NAME: dict[str, Verb] = {v.name: v for v in VERBS}
DUMP_KINDS = ("vault", "owner_envelope", "agent_envelope")


def verbs_for(front: str) -> list[Verb]:
    return [v for v in VERBS if front in v.fronts]


def usage(front: str = NOTEBOOK) -> str:
    """Every verb of a front end, one line each (the full usage: only `help` shows it)."""
    return "\n".join(v.usage(front) for v in verbs_for(front))


# -- parsing ---------------------------------------------------------------------------------------
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
        parser.add_argument(arg.name, **arg.options())
    return parser


def parse(words: Sequence[str], front: str = NOTEBOOK) -> tuple[Verb, argparse.Namespace] | None:
    """The verb and its arguments from a split command line; None when `-h` printed a help.
    A mistake raises UsageProblem."""
    if not words:
        raise UsageProblem(f"needs a sub-command — `{PROMPT[front]} help` lists them")
    verb = find_verb(words[0], front)
    parser = _Raising(prog=f"{PROMPT[front]} {verb.name}", add_help=True)
    parser.verb, parser.front = verb, front
    add_arguments(parser, verb, front)
    try:
        args = parser.parse_args(list(words[1:]))
    except _HelpShown:
        return None
    check(verb, args)
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
    raise UsageProblem(f"unknown sub-command {word!r} — `{PROMPT[front]} help` lists them")


def check(verb: Verb, args: argparse.Namespace) -> None:
    """What argparse cannot say: a negative depth, a layout name that does not exist."""
    if verb.name == "map" and args.depth is not None and args.depth < 0:
        raise UsageProblem("--depth must be 0 or more", verb="map", usage=verb.usage())
    if verb.name == "dump" and args.kind is not None and args.kind not in DUMP_KINDS:
        near = closest(args.kind, DUMP_KINDS)
        raise UsageProblem(
            f"--kind is one of {', '.join(DUMP_KINDS)}" + (f" — did you mean {near!r}?" if near else ""),
            verb="dump",
            usage=verb.usage(),
            suggestion=near,
        )


# -- translations both front ends share ------------------------------------------------------------
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


def edit_changes(args: argparse.Namespace, text: str | None) -> dict[str, Any]:
    """The keyword arguments of `Connection.edit`; a UsageProblem when nothing changes."""
    changes: dict[str, Any] = {}
    if text:
        changes["text"] = text
    if args.topic is not None:
        changes["topic"] = topic_value(args.topic)
    if args.categories is not None:
        changes["categories"] = list(args.categories)
    if not changes:
        raise UsageProblem(
            "say what changes: --text, --topic or --categories (in a notebook, or a cell body)",
            verb="edit",
            usage=BY_NAME["edit"].usage(),
        )
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


# -- completion ------------------------------------------------------------------------------------
def complete(before: str, front: str, sources: Mapping[str, Callable[[], Iterable[str]]]) -> list[str]:
    """What Tab offers for the word being typed, given the text of the command line before the
    cursor (without the prompt): verbs, then a verb's flags, then the values its argument takes
    (`sources[kind]()` lists topics, categories, ids, permissions)."""
    words = before.split()
    current = "" if before.endswith((" ", "\t")) or not before else words.pop()
    if not words:
        return sorted(v.name for v in verbs_for(front) if v.name.startswith(current))
    verb = BY_NAME.get(words[0])
    if verb is None or front not in verb.fronts:
        return []
    if current.startswith("-"):
        return [f for f in verb.flags(front) if f.startswith(current)]
    arg = _argument_at(verb, front, words[1:])
    source = sources.get(arg.completes or "") if arg is not None else None
    values = [str(v) for v in source()] if source is not None else []
    want = current.strip("'\"").casefold()
    out = [_quoted(v) for v in dict.fromkeys(values) if v.casefold().startswith(want)]
    return out or (verb.flags(front) if not current and arg is None else [])


def _argument_at(verb: Verb, front: str, words: list[str]) -> Arg | None:
    """The argument whose value the next word is (a flag waiting for its value, else the next
    positional)."""
    args = verb.args_for(front)
    by_flag = {a.name: a for a in args if not a.positional}
    positional = [a for a in args if a.positional]
    pending: Arg | None = None
    at = 0
    for w in words:
        if w in by_flag:
            pending = None if by_flag[w].flag else by_flag[w]
        elif pending is not None:
            pending = pending if pending.nargs in ("+", "*") else None
        elif at < len(positional) and positional[at].nargs not in ("+", "*"):
            at += 1
    if pending is not None:
        return pending
    return positional[at] if at < len(positional) else None


def _quoted(value: str) -> str:
    return f"'{value}'" if any(c.isspace() for c in value) else value
