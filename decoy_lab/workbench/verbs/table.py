"""The verb table: each `Verb` lists its arguments (`Arg`), the front ends that have it, and says
its own one-line usage. `magics.py` and `commands.py` build their parsers from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from decoy_lab.argtypes import port_number, seconds
from decoy_lab.vocab import PERMISSION_WORDS

NOTEBOOK, SHELL = "notebook", "shell"
BOTH = frozenset({NOTEBOOK, SHELL})
ONLY_NOTEBOOK, ONLY_SHELL = frozenset({NOTEBOOK}), frozenset({SHELL})
PROMPT = {NOTEBOOK: "%decoy", SHELL: "decoy-lab"}
PERMISSIONS = PERMISSION_WORDS  # the names Tab completes, and what each shows the owner


@dataclass(frozen=True)
class Arg:
    """One argument: `name` is `--flag` or a positional's name; `completes` says what Tab offers
    for its value (topic, category, id, permission, file, account, decoy, field_type, set_status, on_off)."""

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
    helps: Mapping[str, str] = field(default_factory=dict)  # the help in one front end's words, where it differs

    @property
    def positional(self) -> bool:
        return not self.name.startswith("-")

    def help_for(self, front: str) -> str:
        """Its help as `front` says it (a shell has no cell body, a notebook no stdin)."""
        return self.helps.get(front, self.help)

    def options(self, front: str = NOTEBOOK) -> dict[str, Any]:
        """The argparse options that declare it in `front`."""
        help = self.help_for(front)
        if self.flag:
            return {"action": "store_true", "help": help, **({"dest": self.dest} if self.dest else {})}
        out: dict[str, Any] = {"help": help, "default": self.default}
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
    summaries: Mapping[str, str] = field(default_factory=dict)  # the summary in one front end's words

    def args_for(self, front: str) -> list[Arg]:
        """Its arguments in `front`; every shell verb also takes `--profile` (the saved connection)."""
        args = [a for a in self.args if front in a.fronts]
        if front == SHELL and not any(a.name == "--profile" for a in args):
            args.append(SHELL_PROFILE)
        return args

    def summary_for(self, front: str) -> str:
        """Its one line as `front` says it: a shell has no widget, no kernel and no cell."""
        return self.summaries.get(front, self.summary)

    def usage(self, front: str = NOTEBOOK) -> str:
        """One line: the prompt, the verb and its arguments."""
        prefix = "%%decoy" if front == NOTEBOOK and self.cell and self.name == "save" else PROMPT[front]
        return " ".join([prefix, self.name, *(a.usage() for a in self.args_for(front) if a.shown)])

    def flags(self, front: str) -> list[str]:
        return [a.name for a in self.args_for(front) if not a.positional]


SHELL_PROFILE = Arg("--profile", "the saved connection to use (default 'default')", metavar="P", fronts=ONLY_SHELL)
_TOPIC = Arg("--topic", "a topic name or topic:<id> ('You' for memories about you)", metavar="T", completes="topic")
_CATS = Arg("--categories", "categories (none: remove them all)", nargs="*", metavar="C", completes="category")
_REVEAL = Arg("--reveal", "show raw keys instead of fingerprints", flag=True)
_PROFILE = Arg("--profile", "the saved connection to use", metavar="P")
_JSON = Arg("--json", "print machine-readable JSON instead of a table", flag=True, fronts=ONLY_SHELL)
_WAIT_ROWS = Arg(
    "--wait", "if rows are on their way, wait as long as the server says (at most 90 s), then read again", flag=True
)
# A shell read waits for rows on their way by default (nothing else can happen at the prompt meanwhile,
# and a script's next line needs them); --wait is still taken there, as the notebook spells it.
_NO_WAIT = Arg(
    "--no-wait",
    "read once: do not wait for rows on their way from the owner's phone (by default a read waits "
    "for them, at most 90 s)",
    flag=True,
    dest="no_wait",
    fronts=ONLY_SHELL,
)
_WAIT_SHELL = Arg(
    "--wait", "wait for rows on their way (the default in a shell)", flag=True, fronts=ONLY_SHELL, shown=False
)
_SHELL_READ = (_NO_WAIT, _WAIT_SHELL, _JSON)

# -- the account family's writes (shell/account_writes.py, notebook/account_handlers.py) ---------------
_ACCOUNT = Arg(
    "account", "the account's id, or its start as the accounts table prints it", metavar="ACCOUNT", completes="account"
)
_DECOY = Arg(
    "decoy", "the Decoy address's id, or its start as the decoys table prints it", metavar="DECOY", completes="decoy"
)
_FIELD = Arg("field", "the field's id (field-add prints it), its start, or its label", metavar="FIELD")
_SERVICE = Arg("service", "the service's name, e.g. Acme", metavar="SERVICE")
_RECORD = (
    _SERVICE,
    Arg("--url", "the service's http(s) URL", metavar="URL"),
    Arg("--username", "the username at the service", metavar="NAME"),
    Arg("--label", "a label for it, in your words", metavar="TEXT"),
)
# A secret is never an argument: a command line lands in the shell's history and the process list,
# a %decoy line in the notebook's history and outputs.
_ASKED = {
    NOTEBOOK: "asked for at a hidden prompt, never typed on the %decoy line; --from NAME takes it from a variable",
    SHELL: "read from a hidden prompt, or one line of stdin when piped; never from the command line",
}
# A notebook run headless (nbclient, papermill) has no password box: the secret comes from a
# variable of the notebook's own, named on the line — the value itself never is.
_FROM = Arg(
    "--from",
    "take the secret from this variable of the notebook (a str or a Secret) instead of asking",
    metavar="NAME",
    dest="from_name",
    fronts=ONLY_NOTEBOOK,
)
_WAIT_FOR = Arg(
    "--wait",
    "follow the answer for up to S seconds (default: ask once and say where it stands)",
    type=seconds,
    default=0.0,
    metavar="S",
)

# An irreversible burn asks first: a terminal is asked to type the address (for several, how many
# there are); without one (a pipe, a notebook cell) nothing is burned unless --yes says so on the
# line itself.
_YES = Arg(
    "--yes",
    "burn without asking (needed when stdin is not a terminal)",
    flag=True,
    helps={NOTEBOOK: "burn it: a notebook has no prompt to confirm at, so the line itself must say so"},
)
ON_OFF = ("on", "off")

ACCOUNT_VERBS: tuple[Verb, ...] = (
    Verb(
        "account-new",
        "create an account with its Decoy address; gives its id, the address and the idempotency key",
        (
            *_RECORD,
            Arg(
                "--idempotency-key",
                "the key of an earlier try whose outcome is unknown: the same key answers the address it made",
                metavar="KEY",
            ),
        ),
    ),
    Verb("account-save", "save an account without a Decoy address; gives its id", _RECORD),
    Verb(
        "account-delete",
        "delete an account, its secret fields and its own Decoy email (needs account.delete, even for one "
        "this connection created); the memories about it stay",
        (_ACCOUNT,),
    ),
    Verb(
        "password",
        "set an account's password, sealed to the owner",
        (_ACCOUNT, _FROM),
        summaries={k: f"set an account's password, sealed to the owner ({v})" for k, v in _ASKED.items()},
    ),
    Verb(
        "field-add",
        "add a secret field (an API key, a recovery code) to an account; gives its id",
        (
            _ACCOUNT,
            Arg("label", "what the field is, e.g. 'API key'", metavar="LABEL"),
            Arg(
                "--type",
                "concealed-string (the default: a secret) or string",
                default="concealed-string",
                metavar="T",
                completes="field_type",
            ),
            Arg("--field-id", "the id of an earlier try whose outcome is unknown: it is stored once", metavar="ID"),
            _FROM,
        ),
        summaries={
            k: f"add a secret field (an API key, a recovery code) to an account; gives its id (the value {v})"
            for k, v in _ASKED.items()
        },
    ),
    Verb(
        "field-set",
        "change a secret field's value",
        (_ACCOUNT, _FIELD, _FROM),
        summaries={k: f"change a secret field's value (the new value {v})" for k, v in _ASKED.items()},
    ),
    Verb("field-delete", "delete a secret field (only the version read now)", (_ACCOUNT, _FIELD)),
    Verb(
        "unlock",
        "read an account's secrets back with the owner's approval (shown masked unless --reveal)",
        (
            _ACCOUNT,
            _WAIT_FOR,
            Arg("--request", "poll this pending request (the id an earlier unlock printed)", metavar="ID"),
            Arg("--reason", "why, in words the owner reads (at most 200 characters)", metavar="TEXT"),
            Arg("--reveal", "show the secrets instead of their length", flag=True),
        ),
    ),
    Verb(
        "protect",
        "give an account a Decoy address (an account that has one keeps it)",
        (
            _ACCOUNT,
            Arg("--decoy", "link this existing address instead of minting one", metavar="DECOY", completes="decoy"),
        ),
    ),
    Verb(
        "decoy-rename",
        "rename a Decoy address: an edit queued for the owner's devices; gives its id and status",
        (
            _DECOY,
            Arg("name", "the new name", nargs="+", metavar="NAME"),
            Arg("--avatar", "a new avatar URL too", metavar="URL"),
            _WAIT_FOR,
        ),
    ),
    Verb(
        "decoy-edit",
        "what became of a queued edit of a Decoy address: pending, applied, rejected or expired",
        (_DECOY, Arg("edit", "the edit's id (decoy-rename prints it)", metavar="EDIT")),
    ),
    Verb(
        "decoy-update",
        "change a Decoy address's label or status in place (inactive pauses its mail, active resumes it)",
        (
            _DECOY,
            Arg("--label", "its new label", metavar="TEXT"),
            Arg("--clear-label", "remove its label", flag=True),
            Arg("--status", "active or inactive", metavar="S", completes="set_status"),
        ),
    ),
    Verb(
        "account-update",
        "change an account in place at the rev read now: its record re-sealed to the owner (--service, "
        "with --url and --username), its label, status or two-factor flag",
        (
            _ACCOUNT,
            Arg(
                "--service", "re-seal the record with this service name (the record is replaced whole)", metavar="NAME"
            ),
            Arg("--url", "the service's http(s) URL in the re-sealed record (needs --service)", metavar="URL"),
            Arg("--username", "the username in the re-sealed record (needs --service)", metavar="NAME"),
            Arg("--label", "its new label, in your words", metavar="TEXT"),
            Arg("--clear-label", "remove its label", flag=True),
            Arg("--status", "active or inactive", metavar="S", completes="set_status"),
            Arg(
                "--two-factor",
                "on or off: whether the account has two-factor sign-in",
                metavar="on|off",
                completes="on_off",
            ),
        ),
    ),
    Verb(
        "decoy-burn",
        "burn Decoy addresses for good, with all their mail (irreversible: decoy-update --status inactive "
        "pauses one instead); asks first; several (at most 20) are burned in one call, each one's outcome said",
        (
            Arg(
                "decoys",
                "the addresses' ids or their starts (at most 20: one confirmation covers one call)",
                nargs="+",
                metavar="DECOY",
                completes="decoy",
            ),
            _YES,
        ),
    ),
    Verb(
        "account-burn-decoy",
        "burn the Personal Alias linked to an account and give it a fresh address (irreversible); asks first",
        (
            _ACCOUNT,
            Arg("--no-replace", "leave the account without an address (no fresh one is made)", flag=True),
            _YES,
        ),
    ),
    Verb(
        "decoy-pause",
        "pause inbound mail on Decoy addresses (reversible: decoy-update --status active resumes one); "
        "says each one's outcome",
        (
            Arg(
                "decoys",
                "the addresses' ids or their starts (sent 20 a call)",
                nargs="+",
                metavar="DECOY",
                completes="decoy",
            ),
        ),
    ),
    Verb(
        "account-import",
        "save a password manager's export as accounts, sealed with the vault key (needs everything); "
        "says each row's outcome",
        (
            Arg(
                "file",
                "a JSON array of records or a CSV with a header (name, username, password, url, notes …)",
                metavar="FILE",
                completes="file",
                helps={
                    SHELL: "a JSON array of records or a CSV with a header (name, username, password, url, "
                    "notes …); - reads stdin"
                },
            ),
        ),
    ),
)

# Every account write says its outcome as one JSON object with --json (a shell's script reads it):
# ids, status, problems, what to reuse — never a secret (an unlock's as their length unless --reveal).
_JSON_OUTCOME = Arg(
    "--json",
    "print the outcome as one JSON object (ids, status, problems; never a secret)",
    flag=True,
    fronts=ONLY_SHELL,
)
ACCOUNT_VERBS = tuple(replace(v, args=(*v.args, _JSON_OUTCOME)) for v in ACCOUNT_VERBS)

VERBS: tuple[Verb, ...] = (
    Verb(
        "connect",
        "pair with a Decoy server",
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
            Arg("--timeout", "seconds to wait for the owner's approval (default 600)", type=seconds, metavar="S"),
        ),
        aliases=("pair",),
        summaries={
            NOTEBOOK: "pair with a Decoy server (the notebook's widget never blocks the kernel)",
            SHELL: "pair with a Decoy server: prints the link and code, waits for the owner, saves a profile",
        },
    ),
    Verb(
        "connections",
        "the connections made here, or the saved profiles",
        summaries={
            NOTEBOOK: "the connections of this notebook (the current one marked) or the saved profiles",
            SHELL: "the saved connections (profiles), the one in use marked",
        },
    ),
    Verb(
        "unpair",
        "end a connection at the server and delete its saved profile",
        (
            Arg("which", "a number or token id from connections", nargs="?", metavar="N", fronts=ONLY_NOTEBOOK),
            _PROFILE,
            Arg("--local", "only delete the profile here (the server is unreachable)", flag=True),
        ),
    ),
    Verb(
        "status",
        "the connection and what it may do",
        (_JSON,),
        summaries={
            NOTEBOOK: "the connection and what it may do (the consent card)",
            SHELL: "the saved connection and what it may do: asked, granted and held now",
        },
    ),
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
            Arg("--timeout", "seconds --wait waits", type=seconds, default=600.0, metavar="S", fronts=ONLY_SHELL),
            Arg("--interval", "seconds between checks", type=seconds, default=3.0, metavar="S", fronts=ONLY_SHELL),
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
            replace(_WAIT_ROWS, fronts=ONLY_NOTEBOOK),
            *_SHELL_READ,
        ),
    ),
    Verb("topics", "the topics, with their memory counts", _SHELL_READ),
    Verb("accounts", "the accounts: name, Decoy address, password set, fields, memories about each", _SHELL_READ),
    Verb(
        "decoys",
        "the Decoy addresses this connection may see: email, name, label, status, account",
        (
            Arg(
                "--status",
                "active (the default), inactive (paused) or all",
                default="active",
                metavar="S",
                completes="address_status",
            ),
            Arg("--search", "only addresses whose label contains TEXT (the server's search)", metavar="TEXT"),
            Arg("--after", "only addresses created after this RFC 3339 date-time, e.g. 2026-12-01", metavar="DATE"),
            Arg("--before", "only addresses created before this RFC 3339 date-time", metavar="DATE"),
            _JSON,
        ),
    ),
    Verb("links", "relations between You and topics", _SHELL_READ),
    Verb("rows", "every served row, readable or not, with reasons", _SHELL_READ),
    Verb(
        "map",
        "the topic map: You at the centre, topics by type and size",
        (_TOPIC, Arg("--depth", "how many rings", type=int, metavar="N"), Arg("--category", metavar="C")),
        fronts=ONLY_NOTEBOOK,
    ),
    Verb("browse", "the memory browser and the map as two views of one vault", (_WAIT_ROWS,), fronts=ONLY_NOTEBOOK),
    Verb(
        "unseal",
        "re-run the read of one row step by step",
        (Arg("id", "a memory or row id", metavar="ID", completes="id"), _REVEAL),
    ),
    Verb(
        "seal",
        "seal a memory step by step without sending it (a dry run)",
        (
            Arg("text", "the memory text", nargs="+", metavar="TEXT", helps={SHELL: "the memory text (- reads stdin)"}),
            _TOPIC,
            _CATS,
            _REVEAL,
        ),
    ),
    Verb(
        "save",
        "save a memory; gives its new id",
        (
            Arg(
                "text",
                "the memory text",
                nargs="*",
                metavar="TEXT",
                helps={
                    NOTEBOOK: "the memory text (or the %%decoy save cell body)",
                    SHELL: "the memory text (- reads stdin)",
                },
            ),
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
            Arg(
                "--text",
                "the new text",
                metavar="TEXT",
                helps={NOTEBOOK: "the new text (or the %%decoy edit cell body)", SHELL: "the new text (- reads stdin)"},
            ),
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
    *ACCOUNT_VERBS,
    Verb("sync", "follow the change cursor; reload only what changed", (_JSON,)),
    Verb(
        "resend",
        "finish the writes (memories, accounts) whose outcome is unknown: the same sealed bytes again, "
        "or read back first where a repeat is not safe",
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
            Arg("blob", "standard base64 text", metavar="BLOB", helps={SHELL: "standard base64 text (- reads stdin)"}),
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
    Verb(
        "inspect",
        "record another agent's traffic through a proxy and show its flows live (never blocks the kernel)",
        (
            Arg("url", "the Decoy base URL to record in front of (default: the embedded sandbox)", nargs="?"),
            Arg("--sandbox", "record in front of the embedded sandbox (started if none is running)", flag=True),
            Arg(
                "--agent-key",
                "the agent's private key (PEM file): opens what it reads",
                metavar="PEM",
                completes="file",
            ),
            Arg("--record", "write the exchanges as HAR 1.2 when the inspector stops", metavar="FILE.har"),
            Arg(
                "--port", "loopback port to listen on (default: any free one)", type=port_number, default=0, metavar="P"
            ),
            Arg("--stop", "stop the running inspector (and write its --record)", flag=True),
        ),
        fronts=ONLY_NOTEBOOK,
    ),
    Verb(
        "check",
        "judge an agent by the spec under staged faults; the scorecard links each failure to its flow",
        (
            Arg("--scenario", "scenarios to run (default: all)", nargs="+", dest="scenarios", metavar="NAME"),
            Arg(
                "--timeout",
                "time limit per scenario in seconds (default 120)",
                type=seconds,
                default=120.0,
                metavar="S",
            ),
            Arg("--agent-key", "the agent's private key (PEM file): self_wrap is opened with it", metavar="PEM"),
            Arg(
                "--env",
                "variables of yours to give the agent (it gets none else but PATH, the locale and TZ)",
                nargs="+",
                metavar="NAME",
            ),
            Arg("command", "-- COMMAND [ARG…]: the agent ({url} is replaced by its base URL)", nargs="*"),
        ),
        fronts=ONLY_NOTEBOOK,
    ),
)

BY_NAME: dict[str, Verb] = {v.name: v for v in VERBS}
DUMP_KINDS = ("vault", "owner_envelope", "agent_envelope")
ADDRESS_STATUSES = ("active", "inactive", "all")  # `GET /api/agent/decoys`' `status`
SET_STATUSES = ADDRESS_STATUSES[:2]  # what `PATCH /api/agent/decoys/{id}` sets (`all` is only a filter)


def verbs_for(front: str) -> list[Verb]:
    return [v for v in VERBS if front in v.fronts]


def usage(front: str = NOTEBOOK) -> str:
    """Every verb of a front end, one line each (the full usage: only `help` shows it)."""
    return "\n".join(v.usage(front) for v in verbs_for(front))
