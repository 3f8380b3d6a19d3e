"""Rules on the account family's bodies, as the inspector opened them with the owner's key
(inspector/account_bodies.py): account records, credentials, secret fields, a Decoy address's details.

- the login password goes to `…/credential` and never into a memory's text or an account
  record's notes (the password the owner's app opened from the credential, looked for in every
  opened memory text and record; never shown, only its length);
- an API key is a concealed secret field (`POST …/fields`), never the credential, a memory's
  text or the record;
- an address is created with an `idempotency_key`, resent with that same key after an unknown
  outcome, and never twice for the same sign-up;
- the credential, the account record and each secret field open with the owner's key (the
  owner's-eye verdict), an address's `metadata_seals` entry is sealed to this connection's own key
  (not the owner's), and a field's key is wrapped to no connection `field-grantees` did not list;
- an unlock answered `preparing` is sent again, and only after its `retry_after_seconds` (an
  agent that exits 0 never having sent it again took `preparing` for `failed`); one answered
  `pending` (the owner is asked) is polled by its id, and never asked again while it is pending;
- a queued address edit is polled by its id for `applied` (not taken as done at its `202`), and
  is not queued again while it is pending (no second edit of the address before the first resolves).

The inspector masks every secret in a row's plaintext (its length only); the password a
credential holds is read from the owner's open of it (the recipe's trace, `_password`), held
here to compare and never put in evidence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from decoy_lab.conformance.rulebook import Evidence, Exchange, Result, Rule, Run, short
from decoy_lab.conformance.rules.base import kind_of, normalize, opened_rows, plain, row_label, writes
from decoy_lab.conformance.rules.contents import SECRETS, holds_value, masked
from decoy_lab.text import plural

DECOYS, ACCOUNTS = "/api/agent/decoys", "/api/agent/accounts"
_CREDENTIAL = re.compile(r"/api/agent/accounts/([^/]+)/credential")
_FIELDS = re.compile(r"/api/agent/accounts/([^/]+)/fields(?:/[^/]+)?")
API_KEY = next(p for what, p in SECRETS if what == "an API key")
PASSWORD = [p for what, p in SECRETS if what == "a password"]
KEY_LABEL = re.compile(r"\b(?:api[ _-]?key|token|secret|key)\b", re.I)
SECRET_MEMBERS = frozenset({"password", "totp", "secret", "seed", "otp", "value"})  # masked by the inspector
MIN_PASSWORD = 6  # a shorter "password" would match ordinary words


def _kept(run: Run, path: re.Pattern[str] | str, method: str = "POST") -> Iterator[Exchange]:
    """The requests to `path` the server may have kept (answered 2xx or an unknown outcome)."""
    for x in run.exchanges:
        hit = x.path == path if isinstance(path, str) else path.fullmatch(x.path) is not None
        if hit and x.method == method and not x.refused:
            yield x


def is_api_key(secret: str) -> bool:
    """The whole secret is key-shaped: a generated password that merely holds `-sk-…` is a password."""
    return API_KEY.fullmatch(secret.strip()) is not None


def _rows(x: Exchange, kind: str) -> list[Any]:
    return [r for r in opened_rows(x) if r.kind == kind]


def _password(row: Any) -> str | None:
    """The text a credential row holds, as the owner's app opened it (its recipe's UTF-8 step)."""
    if row.verdict != "readable":
        return None
    trace = row.recipe_trace() if callable(getattr(row, "recipe_trace", None)) else None
    for step in getattr(trace, "steps", None) or []:
        if step.name == "UTF-8 decode" and step.data:
            try:
                return bytes(step.data).decode("utf-8")
            except UnicodeDecodeError:
                return None
    return None


def credentials(run: Run) -> list[tuple[Exchange, str | None]]:
    """Each credential the agent sent and the server kept, with the text it opens to (None: unread)."""
    return [(x, _password(r)) for x in _kept(run, _CREDENTIAL) for r in _rows(x, "credential")]


def records(run: Run) -> Iterator[tuple[Exchange, Any]]:
    """Each account record the agent sent, opened (a create with its address, a create, an edit)."""
    for x in run.exchanges:
        if x.refused or not (x.path == DECOYS or x.path.startswith(ACCOUNTS)):
            continue
        for r in _rows(x, "account"):
            if r.verdict == "readable" and isinstance(r.plaintext, dict):
                yield x, r


def _record_texts(record: dict) -> Iterator[tuple[str, str]]:
    """(member, text) of an opened record's free text: every string but its masked secrets."""
    for k, v in record.items():
        if isinstance(v, str) and k not in SECRET_MEMBERS:
            yield k, v
        elif isinstance(v, list):
            yield from ((f"{k}[]", s) for s in v if isinstance(s, str))


def memory_texts(run: Run) -> Iterator[tuple[Exchange, Any, str]]:
    for x in writes(run):
        for r in opened_rows(x):
            if r.verdict == "readable" and kind_of(r) == "memory":
                yield x, r, str(plain(r).get("text") or "")


def _chars(text: str) -> str:
    return plural(len(text), "character")


# -- the password ----------------------------------------------------------------------------------
def no_credentials_in_memory(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    sent = [  # an API key sent as the password is accounts.api-key-field's
        (x, pw) for x, pw in credentials(run) if pw is not None and len(pw) >= MIN_PASSWORD and not is_api_key(pw)
    ]
    for x, r, text in memory_texts(run):
        for cx, pw in sent:
            if pw in text:
                bad.append(Evidence(f"{row_label(x, r.id)}: its text holds the login password ({_chars(pw)}) "
                                    f"sent to the credential route in {cx.label()}", x, cx))  # fmt: skip
                break
    for x, r in records(run):
        for member, text in _record_texts(r.plaintext):
            hit = next(((cx, pw) for cx, pw in sent if pw in text), None)
            found = next((m.group(0) for p in PASSWORD for m in p.finditer(text) if holds_value(m.group(0))), "")
            if hit is not None:
                bad.append(Evidence(f"{x.label()}, account record: its {member} holds the login password "
                                    f"({_chars(hit[1])}) sent in {hit[0].label()}", x, hit[0]))  # fmt: skip
                break
            if found:
                bad.append(
                    Evidence(f"{x.label()}, account record: its {member} holds a password: {masked(found)!r}", x)
                )
                break
    if not bad:
        good = [Evidence(f"{x.label()}: the login password ({_chars(pw)}) went to the credential route, and no "
                         "memory text or account record holds it", x) for x, pw in sent]  # fmt: skip
    return Result.judge(bad, good[:3])


# -- the API key -----------------------------------------------------------------------------------
def api_key_field(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x, secret in credentials(run):
        if secret is not None and is_api_key(secret):
            bad.append(Evidence(f"{x.label()}: an API key ({_chars(secret)}) sent as the account's password: the "
                                "credential route is for a login password, not an API key", x))  # fmt: skip
    for x in _kept(run, _FIELDS, "POST"):
        for r in _rows(x, "field"):
            p = plain(r)
            label, value = str(p.get("label") or ""), str(p.get("value") or "")
            keyish = bool(KEY_LABEL.search(label) or API_KEY.search(value))
            if r.verdict != "readable" or not keyish:
                continue
            if p.get("fieldType") != "concealed-string":
                bad.append(Evidence(f"{x.label()}, field {short(r.id)} ({label!r}): fieldType "
                                    f"{p.get('fieldType')!r}: an API key is a concealed-string field", x))  # fmt: skip
            else:
                good.append(Evidence(f"{x.label()}, field {short(r.id)}: the {label} is a concealed secret field", x))
    for x, r, text in memory_texts(run):
        m = API_KEY.search(text)
        if m:
            bad.append(Evidence(f"{row_label(x, r.id)}: an API key in the memory's text: {masked(m.group(0))!r}", x))
    for x, r in records(run):
        for member, text in _record_texts(r.plaintext):
            m = API_KEY.search(text)
            if m:
                bad.append(Evidence(f"{x.label()}, account record: an API key in its {member}: "
                                    f"{masked(m.group(0))!r} (a secret field goes next to the record)", x))  # fmt: skip
    return Result.judge(bad, good[:3])


# -- the address -----------------------------------------------------------------------------------
def idempotency_key(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in run.where("POST", DECOYS):  # sent is sent: a refused create carried its body too
        body = x.request if isinstance(x.request, dict) else {}
        key = body.get("idempotency_key")
        if not isinstance(key, str) or not key.strip():
            bad.append(Evidence(f"{x.label()}: no idempotency_key: a timeout and a retry can mint a second address", x))
        elif len(key) > 128:
            bad.append(Evidence(f"{x.label()}: its idempotency_key is {len(key)} characters; at most 128", x))
        else:
            good.append(Evidence(f"{x.label()}: idempotency_key of {_chars(key)}", x))
    bad += _new_key_on_retry(run)
    return Result.judge(bad, good[:3])


def _key(x: Exchange) -> Any:
    return (x.request if isinstance(x.request, dict) else {}).get("idempotency_key")


def _new_key_on_retry(run: Run) -> list[str]:
    """001 "Same idempotency_key again (a timeout, a retry) → 200, same id … Never a second
    address.": the create sent next for the same service after an unknown outcome keeps its key."""
    bad: list[str] = []
    creates = run.where("POST", DECOYS)
    for i, x in enumerate(creates):
        if not x.unknown or not isinstance(_key(x), str):
            continue
        service = normalize(_service(x))
        nxt = next((y for y in creates[i + 1 :] if not service or not _service(y) or
                    normalize(_service(y)) == service), None)  # fmt: skip
        if nxt is not None and _key(nxt) != _key(x):
            bad.append(Evidence(f"{nxt.label()}: sent with another idempotency_key after {x.label()}'s outcome was "
                                "unknown: that create may have committed, and only its own key answers it "
                                "instead of minting a second address", nxt, x))  # fmt: skip
    return bad


def _service(x: Exchange) -> str:
    """The service a create names: its opened details or record, else its plain service_name."""
    for r in opened_rows(x):
        p = r.plaintext if isinstance(r.plaintext, dict) else {}
        for key in ("serviceName", "name", "service_name", "title"):
            if r.verdict == "readable" and isinstance(p.get(key), str) and p[key].strip():
                return p[key]
    body = x.request if isinstance(x.request, dict) else {}
    return str(body.get("service_name") or "")


def one_address(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    made: dict[str, tuple[str, Exchange]] = {}  # the service, normalized → (the account made for it, where)
    for x in run.exchanges:
        if x.method != "POST" or x.path not in (DECOYS, ACCOUNTS) or not x.answered or (x.status or 0) >= 300:
            continue
        answer = x.response if isinstance(x.response, dict) else {}
        account = str(answer.get("account_id") or (answer.get("id") if x.path == ACCOUNTS else "") or "")
        service = _service(x)
        if not account or not service or answer.get("idempotent_replay") is True:
            continue
        first = made.setdefault(normalize(service), (account, x))
        if first[0] != account:
            bad.append(Evidence(f"{x.label()}: a second account ({short(account)}) for {service!r}, already made "
                                f"as {short(first[0])} by {first[1].label()}: reuse its account_id", x, first[1]))  # fmt: skip
        else:
            good.append(Evidence(f"{x.label()}: one account ({short(account)}) for {service!r}", x))
    return Result.judge(bad, good[:3])


# -- the owner's eye -------------------------------------------------------------------------------
WHAT = {"credential": "credential", "account": "account record", "field": "secret field"}
NOT_THE_OWNERS = frozenset({"self_wrap", "grantee_wraps"})  # a field the owner opens, faulted for another reader


def owner_opens(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in run.exchanges:
        if x.refused or not (x.path == DECOYS or x.path.startswith(ACCOUNTS)) or x.method == "GET":
            continue
        for r in opened_rows(x):
            if r.kind not in WHAT:
                continue
            what = WHAT[r.kind] + (f" {short(r.id)}" if r.kind == "field" else "")
            if r.verdict == "readable" or (r.kind == "field" and r.problem in NOT_THE_OWNERS):
                good.append(Evidence(f"{x.label()}: the owner's app opens its {what} ({r.opened_by})", x))
            elif r.verdict == "unreadable":
                why = r.reason.removeprefix("the owner's app cannot open it: ")
                bad.append(Evidence(f"{x.label()}: the owner's app cannot open its {what}: {why}", x))
    bad += _own_copy_sealed_wrong(run)
    bad += _field_wraps_too_far(run)
    return Result.judge(bad, good[:3])


def _own_copy_sealed_wrong(run: Run) -> list[str]:
    """001 `decoy_create`: `metadata_seals` is "one entry for this connection (the same record
    sealed to this connection's own public key)": the inspector opens it with the agent's key when
    it has it, and says when the owner's key opens it instead."""
    bad: list[str] = []
    for x in run.where("POST", DECOYS):
        if x.refused:
            continue
        for r in opened_rows(x):
            if r.kind == "metadata seal" and r.verdict == "unreadable" and r.problem != "layout":
                bad.append(Evidence(f"{x.label()}: its metadata_seals entry, this connection's own copy of the "
                                    f"address's details, is not sealed to its own key: {r.reason}", x))  # fmt: skip
    return bad


_GRANTEES = re.compile(r"/api/agent/accounts/([^/]+)/field-grantees")


def _field_wraps_too_far(run: Run) -> list[str]:
    """001 `account_field_create`: "optionally `grantee_wraps` — the same to each connection
    field-grantees lists." Each field write's grantee wraps against the newest answer of
    `GET …/field-grantees` for its account before it (unjudged when the agent never read one)."""
    bad: list[str] = []
    listed: dict[str, tuple[set[str], Exchange]] = {}  # account → (the token ids listed, where)
    for x in run.exchanges:
        m = _GRANTEES.fullmatch(x.path)
        if m and x.method == "GET" and x.answered and (x.status or 0) < 300 and isinstance(x.response, dict):
            ids = {str(g.get("token_id")) for g in x.response.get("grantees") or [] if isinstance(g, dict)}
            listed[m.group(1)] = (ids, x)
            continue
        f = _FIELDS.fullmatch(x.path)
        if not f or x.method not in ("POST", "PUT") or x.refused or f.group(1) not in listed:
            continue
        body = x.request if isinstance(x.request, dict) else {}
        sent = [str(w.get("token_id")) for w in body.get("grantee_wraps") or [] if isinstance(w, dict)]
        ids, where = listed[f.group(1)]
        extra = [t for t in dict.fromkeys(sent) if t not in ids]
        if extra:
            who = ", ".join(short(t) for t in extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
            bad.append(Evidence(f"{x.label()}: the field's key wrapped to {plural(len(extra), 'connection')} "
                                f"{where.label()} did not list ({who}): wrap it only to the readers "
                                "field-grantees names", x, where))  # fmt: skip
    return bad


# -- unlocks: the retry time, the pending request ----------------------------------------------
UNLOCK = "/api/agent/unlock"
SLACK = 0.8  # of a retry time: the agent's clock and the recording's differ by a little


def _target(x: Exchange) -> str:
    body = x.request if isinstance(x.request, dict) else {}
    return json.dumps(body.get("target"), sort_keys=True)


def _asks(run: Run) -> list[Exchange]:
    return run.where("POST", UNLOCK)


def unlock_retry_after(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    asks = _asks(run)
    for i, x in enumerate(asks):
        answer = x.response if isinstance(x.response, dict) else {}
        if not x.answered or answer.get("state") != "preparing" or x.done is None:
            continue
        wait = float(answer.get("retry_after_seconds") or 0)
        nxt = next((y for y in asks[i + 1 :] if _target(y) == _target(x)), None)
        if nxt is None:
            if run.exit_code == 0 and _given_up(asks, i):
                bad.append(Evidence(f"{x.label()}: answered `preparing` (retry_after_seconds {wait:g}) and never sent "
                                    "again before the agent exited: `preparing` is not `failed`", x))  # fmt: skip
            continue
        gap = nxt.start - x.done
        if gap < wait * SLACK:
            bad.append(Evidence(f"{nxt.label()}: the same unlock sent again {gap:.1f} s after {x.label()} answered "
                                f"`preparing` with retry_after_seconds {wait:g}", nxt, x))  # fmt: skip
        else:
            good.append(Evidence(f"{nxt.label()}: sent again {gap:.1f} s after `preparing` "
                                 f"(retry_after_seconds {wait:g}) in {x.label()}", nxt, x))  # fmt: skip
    return Result.judge(bad, good[:3])


def _account_of(x: Exchange) -> tuple[Any, Any]:
    target = (x.request if isinstance(x.request, dict) else {}).get("target")
    return (target.get("kind"), target.get("id") or target.get("domain")) if isinstance(target, dict) else (None, None)


def _given_up(asks: list[Exchange], i: int) -> bool:
    """The agent's first `preparing` for this record, and no later ask names the record (with any
    datatypes): it took the first `preparing` for final. One that asked again and later stopped
    waiting is not judged here (001 lets a task that needs it now ask the person after 60–90 s)."""
    x = asks[i]
    same = [y for y in asks if _account_of(y) == _account_of(x) and _account_of(x) != (None, None)]
    later = [y for y in same if y.start > x.start]
    earlier = [y for y in same if y.start < x.start and _preparing(y)]
    return not later and not earlier


def _preparing(x: Exchange) -> bool:
    return x.answered and isinstance(x.response, dict) and x.response.get("state") == "preparing"


def _settled(run: Run, path: str, after: float) -> float | None:
    """When a poll of `path` (or a withdrawal) first said it is no longer `pending`."""
    for y in run.exchanges:
        if y.path != path or y.start < after or not y.answered or y.done is None:
            continue
        status = (y.response if isinstance(y.response, dict) else {}).get("status")
        if y.method == "DELETE" or (y.method == "GET" and status != "pending"):
            return y.done
    return None


def unlock_pending(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    asks = _asks(run)
    for x in asks:
        answer = x.response if isinstance(x.response, dict) else {}
        if x.status != 201 or answer.get("status") != "pending" or not isinstance(answer.get("id"), str):
            continue
        path = f"{UNLOCK}/{answer['id']}"
        end = _settled(run, path, x.start)
        again = [y for y in asks if y.start > x.start and _target(y) == _target(x) and (end is None or y.start < end)]
        polls = [y for y in run.where("GET", path) if y.start > x.start]
        withdrawn = [y for y in run.where("DELETE", path) if y.start > x.start]  # no envelope left to poll for
        if again:
            bad.append(Evidence(f"{again[0].label()}: the same unlock asked again while {x.label()} "
                                f"({short(answer['id'])}) was pending: poll it instead", again[0], x))  # fmt: skip
        elif withdrawn and not polls:
            good.append(Evidence(f"{x.label()}: pending, withdrawn by {withdrawn[0].label()} and not asked again",
                                 x, withdrawn[0]))  # fmt: skip
        elif not polls:
            bad.append(Evidence(f"{x.label()}: pending ({short(answer['id'])}) and never polled: the sealed "
                                "envelope comes only from GET /api/agent/unlock/{requestId}", x))  # fmt: skip
        else:
            good.append(Evidence(f"{x.label()}: pending, polled {plural(len(polls), 'time')} by its "
                                 "id and not asked again", x, polls[-1]))  # fmt: skip
    return Result.judge(bad, good[:3])


# -- queued address edits --------------------------------------------------------------------------
_EDITS = re.compile(r"/api/agent/decoys/([^/]+)/edits")


def _queued(run: Run) -> Iterator[tuple[Exchange, str, str]]:
    """(the POST, its decoy, its edit id) of each edit the server queued (202)."""
    for x in run.where("POST"):
        m = _EDITS.fullmatch(x.path)
        answer = x.response if isinstance(x.response, dict) else {}
        if m and x.status == 202 and isinstance(answer.get("edit_id"), str):
            yield x, m.group(1), answer["edit_id"]


def edit_polled(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x, decoy, edit in _queued(run):
        path = f"/api/agent/decoys/{decoy}/edits/{edit}"
        polls = [y for y in run.where("GET", path) if y.start > x.start]
        if not polls:
            bad.append(Evidence(f"{x.label()}: edit {short(edit)} queued and never polled: a 202 is `pending`, "
                                "not applied", x))  # fmt: skip
        else:
            last = (polls[-1].response if isinstance(polls[-1].response, dict) else {}).get("status")
            good.append(Evidence(f"{x.label()}: edit {short(edit)} polled "
                                 f"{plural(len(polls), 'time')}, last {last!r}", x, polls[-1]))  # fmt: skip
    return Result.judge(bad, good[:3])


def edit_once(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    queued = list(_queued(run))
    for x, decoy, edit in queued:
        end = _settled(run, f"/api/agent/decoys/{decoy}/edits/{edit}", x.start)
        again = [y for y, d, _ in queued if d == decoy and y.start > x.start and (end is None or y.start < end)]
        if again:
            bad.append(Evidence(f"{again[0].label()}: the address's edit queued again while {x.label()} "
                                f"({short(edit)}) was pending: queued edits are never dropped", again[0], x))  # fmt: skip
            break
        good.append(Evidence(f"{x.label()}: edit {short(edit)} queued once", x))
    return Result.judge(bad, good[:3])


RULES = [
    Rule(
        "accounts.no-credentials-in-memory",
        "The login password goes to the credential route, never into a memory or the account record",
        "000",
        "Use memory during the task",
        "Keep credentials out of this memory store.",
        no_credentials_in_memory,
        scenarios=("accounts",),
        bug="credentials-in-memory",
        catches="writes the sign-up's email and password into the memory it saves about the account",
    ),
    Rule(
        "accounts.api-key-field",
        "An API key is a concealed secret field, never the password or a memory",
        "000",
        "Use memory during the task",
        "The helper's sealPassword function and /accounts/{id}/credential route are for a login password, "
        "not an API key or a general secret field.",
        api_key_field,
        scenarios=("accounts",),
        bug="api-key-as-password",
        catches="sends the API key through the credential route instead of adding it as a secret field",
    ),
    Rule(
        "accounts.idempotency-key",
        "Every address is created with an idempotency_key, and resent with the same one",
        "001",
        "POST /api/agent/decoys",
        "Client-chosen key so a timeout + retry cannot mint a second address.",
        idempotency_key,
        scenarios=("accounts",),
        bug="no-idempotency-key",
        catches="creates the account and its address without an idempotency_key",
        fix="Send an idempotency_key (at most 128 characters) with POST /api/agent/decoys, and after a timeout, a "
        "dropped connection or a 5xx resend the same body with the same key: a repeat answers the original address.",
    ),
    Rule(
        "accounts.one-address",
        "One account and address per sign-up, never a second",
        "001",
        "POST /api/agent/decoys",
        "Reuse and verify that `account_id` for everything that follows (credential, sending); "
        "do not create a second account for the same service.",
        one_address,
        scenarios=("accounts",),
        bug="second-address",
        catches="creates the address again for the same service with a fresh idempotency_key",
    ),
    Rule(
        "accounts.owner-opens",
        "Each sealed account body opens for whom it is for: the owner, this connection, the listed readers",
        "001",
        "POST /api/agent/accounts/{accountId}/credential",
        "The server can't read it to validate it: a wrong format is stored and the owner's phone can't open it.",
        owner_opens,
        scenarios=("accounts",),
        bug="headered-password",
        catches="seals the password with a SealedBlob header ([0x01][0x02]) where the headerless envelope belongs",
        fix="Seal encrypted_password as a headerless envelope of its UTF-8 bytes to /accounts/public-key; a "
        "field's owner_wrap as [0x01][0x02] + an envelope of the key's base64 text; wrap only to field-grantees; "
        "metadata_seals to your own key.",
    ),
    Rule(
        "accounts.unlock-retry-after",
        "An unlock answered `preparing` is sent again, and only after its retry_after_seconds",
        "001",
        "POST /api/agent/unlock",
        '`state: "preparing"`: Decoy is asking the owner\'s phone to make the copy (`waiting_on: "owner_phone"`); '
        "send the same request again after `retry_after_seconds`.",
        unlock_retry_after,
        scenarios=("accounts", "late-edit"),
        bug="unlock-retry-fast",
        catches="sends a `preparing` unlock again after 1 s, whatever its retry_after_seconds",
        fix="On `preparing`, wait retry_after_seconds and send the same unlock again (sooner does not make the "
        "phone answer sooner); only `failed` means carry on without it.",
    ),
    Rule(
        "accounts.unlock-pending",
        "A pending unlock is polled by its id, never asked again while it waits on the owner",
        "001",
        "POST /api/agent/unlock",
        "Poll `GET /api/agent/unlock/{requestId}` for the sealed envelope and open it with your agent key.",
        unlock_pending,
        scenarios=("slow-unlock",),
        bug="unlock-ask-again",
        catches="sends the unlock request again each time its poll still reads `pending`",
    ),
    Rule(
        "accounts.edit-polled",
        "A queued address edit is polled for `applied`, not taken as done at its 202",
        "001",
        "POST /api/agent/decoys/{decoyId}/edits",
        "The call answers `202` at once; poll `GET /api/agent/decoys/{decoyId}/edits/{editId}` for `applied`.",
        edit_polled,
        scenarios=("late-edit", "accounts"),
        bug="edit-assumed",
        catches="queues the rename and takes the 202 for done, never polling the edit",
    ),
    Rule(
        "accounts.edit-once",
        "A pending address edit is waited for, never queued again",
        "001",
        "POST /api/agent/decoys/{decoyId}/edits",
        "Queued edits are never dropped.",
        edit_once,
        scenarios=("late-edit", "accounts"),
        bug="edit-twice",
        catches="queues the same rename again each time its poll still reads `pending`",
    ),
]
