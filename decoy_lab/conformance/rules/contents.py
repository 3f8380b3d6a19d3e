"""Rules on what only the check holds: every row opened with the owner's key, and every byte sent.

- what an opened memory's text must not hold (passwords, booking references, keys: simple,
  named patterns, each shown with the bytes that matched, masked);
- what the HTTP body must not carry outside ciphertext (the text, a category, a topic or account
  name, found in any other field of the body);
- a correction sent as a new memory instead of a PUT of the same id (a new row whose first line
  and filing are those of a memory the agent wrote before and never deleted);
- keys and nonces used again across rows (one key for two ids, one nonce for two ciphertexts);
- a topic named in an opened memory's `metadata` (it files nothing: the topic goes in `about`);
- a memory about an account that names the account (its about is `account:<uuid>`, no entityName);
- a memory copied to relabel it (a new row with the text of one the agent keeps, other labels);
- the spec's fixture bytes (the example's ciphertext and wraps, for a discarded test key) sent.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

from decoy_lab.conformance.rulebook import MEMORIES, Evidence, Exchange, Result, Rule, Run, short
from decoy_lab.conformance.rules.base import kind_of, labels_of, opened_rows, plain, row_label, sent_rows, writes

# "Keep booking references, passwords and keys out of the text": each a pattern a reader can check
SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a password", re.compile(r"\b(?:login\s+)?(?:password|passcode|passphrase|pwd|PIN)\b\s*(?::|=|\bis\b)\s*\S{3,}", re.I)),
    ("a booking reference", re.compile(
        r"\b(?:booking|reservation|confirmation|record\s+locator)\s*(?:ref(?:erence)?|code|number|no\.?|#)?\s*"
        r"(?::|=|\bis\b)\s*(?-i:[A-Z0-9]{5,10})\b", re.I)),  # the reference in capitals: "booking is confirmed" is none
    ("a booking reference", re.compile(r"\bPNR\b\s*(?::|=|\bis\b)?\s*[A-Z0-9]{6}\b")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("an API key", re.compile(r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{12,}|\bsk-[A-Za-z0-9_-]{20,}|\bAKIA[0-9A-Z]{16}\b"
                              r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\bxox[abpr]-[A-Za-z0-9-]{10,}")),
    ("a key or token", re.compile(r"\b(?:api[_ -]?key|secret(?:[_ -]?key)?|access[_ -]?token|token)\b\s*(?::|=|\bis\b)\s*\S{8,}",
                                  re.I)),
)  # fmt: skip
# A word after "password is" / "API key:" that says where or how the secret is kept, not what it is:
# "the login password is saved on the account" names the credential and holds none.
DESCRIBED = re.compile(
    r"[a-z]+ed|kept|set|held|known|hidden|written|sent|given|not|now|also|still|already|the|this|that|its|their"
    r"|there|here|safe|safely|secret|private|available|elsewhere"
)  # lower case (a sentence may capitalise its first letter): "SuperSeed" or "KEPT99" is a value
SEPARATOR = re.compile(r"(?::|=|\bis\b)\s*")
BINARY = frozenset({"ciphertext", "owner_wrap", "self_wrap", "wrapped_key"})
OPAQUE = frozenset({"id", "kid", "token_id", "row_id", "expected_rev", "ids", "via", "self_via", "removed_reasons"})


def masked(found: str) -> str:
    """The matched bytes with the secret value cut: enough to see what broke it, not to use it."""
    m = SEPARATOR.search(found)
    if m is None:
        return f"{found[:12]}…"
    value = found[m.end() :]
    return f"{found[: m.end()]}{value[:2]}…({len(value)} chars)"


def secrets_in(text: str) -> list[tuple[str, str]]:
    return [(what, m.group(0)) for what, pattern in SECRETS for m in pattern.finditer(text) if holds_value(m.group(0))]


def holds_value(found: str) -> bool:
    """A match is a secret unless the word after its `:`/`=`/`is` is one that describes where or how
    the secret is kept ("password is saved", "API key: stored on the account"), never a value."""
    m = SEPARATOR.search(found)
    if m is None:
        return True  # a key by its shape (sk_live_…, -----BEGIN …): the bytes are the secret
    word = found[m.end() :].rstrip(".,;!?)")
    return DESCRIBED.fullmatch(word[:1].lower() + word[1:]) is None


def memories_written(run: Run) -> Iterator[tuple[Exchange, Any]]:
    for x in writes(run):
        for r in opened_rows(x):
            if r.verdict == "readable" and kind_of(r) == "memory":
                yield x, r


def no_secrets(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x, r in memories_written(run):
        found = secrets_in(str(plain(r).get("text") or ""))
        if found:
            what, text = found[0]
            bad.append(Evidence(f"{row_label(x, r.id)}: its text holds {what}: {masked(text)!r}", x))
        else:
            good.append(Evidence(f"{row_label(x, r.id)}: no password, booking reference or key in its text", x))
    return Result.judge(bad, good[:3])


def _needles(x: Exchange) -> list[tuple[str, str]]:
    """(what, the plaintext bytes) that must not appear outside ciphertext in this write."""
    out: list[tuple[str, str]] = []
    for r in opened_rows(x):
        p = plain(r)
        for line in str(p.get("text") or "").splitlines():
            if len(line.strip()) >= 8:
                out.append(("its text", line.strip()))
        out += [("a category", str(c)) for c in p.get("categories") or [] if len(str(c)) >= 3]
        topic = p.get("topic") if isinstance(p.get("topic"), dict) else {}
        for name in (p.get("name"), p.get("entity_name"), (topic or {}).get("name")):
            if isinstance(name, str) and len(name) >= 3 and name != "default_user":
                out.append(("a topic name", name))
        account = p.get("account")
        if isinstance(account, dict) and account.get("name"):
            out.append(("an account name", str(account["name"])))
    return out


def _walk(obj: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in BINARY or k in OPAQUE:
                continue
            yield from _walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path, obj


def outside_ciphertext(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in writes(run, refused=True):  # bytes sent are sent, whatever the answer
        needles = _needles(x)
        if not needles:
            continue
        leaks = [
            (where, what, needle)
            for where, value in _walk(x.request)
            if isinstance(value, str)
            for what, needle in needles
            if needle.lower() in value.lower() or (what == "a category" and value.lower() == needle.lower())
        ]
        if leaks:
            where, what, needle = leaks[0]
            bad.append(Evidence(f"{x.label()}: {what} ({needle[:40]!r}) in the body at {where}, outside ciphertext", x))
        elif len(good) < 3:
            good.append(Evidence(f"{x.label()}: nothing of the plaintext outside ciphertext", x))
    return Result.judge(bad, good[:3])


def _first_line(text: str) -> str:
    return " ".join(text.strip().splitlines()[0].lower().split()) if text.strip() else ""


def correct_by_id(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    deleted: set[str] = set()
    seen: dict[tuple[str, str], tuple[str, Exchange, str]] = {}  # (first line, about) → (row id, where, text)
    for x in run.exchanges:
        if x.path == f"{MEMORIES}/delete" and x.method == "POST" and isinstance(x.response, dict):
            deleted |= {str(i) for i in x.response.get("deleted") or []}
            continue
        if x.path != MEMORIES or x.method not in ("POST", "PUT") or x.refused:
            continue
        for r in opened_rows(x):
            if r.verdict != "readable" or kind_of(r) != "memory":
                continue
            p = plain(r)
            key = (_first_line(str(p.get("text") or "")), str(p.get("about") or ""))
            if not key[0]:
                continue
            earlier = seen.get(key)
            text = str(p.get("text") or "")
            if (
                x.method == "POST"
                and earlier
                and earlier[0] != r.id
                and earlier[0] not in deleted
                and text != earlier[2]
            ):
                bad.append(
                    Evidence(
                        f"{row_label(x, r.id)}: a new memory ({key[0][:50]!r}) for memory {short(earlier[0])} "
                        f"of {earlier[1].label()}, which it corrects: not a PUT of the same id",
                        x,
                        earlier[1],
                    )
                )
            elif x.method == "PUT" and earlier and earlier[0] == r.id:
                good.append(Evidence(f"{row_label(x, r.id)}: corrected in place, by id", x))
            seen.setdefault(key, (r.id, x, text))
    return Result.judge(bad, good[:3])


def _nonce(ciphertext: Any) -> bytes:
    try:
        raw = base64.b64decode(str(ciphertext), validate=True)
    except ValueError:
        return b""
    return raw[2:14] if len(raw) > 30 and raw[:2] == b"\x01\x01" else b""


def fresh_keys(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    kids: dict[str, tuple[str, Exchange]] = {}  # kid → (the row id that first used it, where)
    nonces: dict[bytes, tuple[str, str, Exchange]] = {}  # nonce → (row id, ciphertext, where)
    for x in writes(run):
        for row in sent_rows(x):
            rid, kid, ct = row["id"], str(row.get("kid") or ""), str(row.get("ciphertext") or "")
            first = kids.setdefault(kid, (rid, x)) if kid else (rid, x)
            if first[0] != rid:
                bad.append(Evidence(f"{row_label(x, rid)}: kid {kid} is the key of row {short(first[0])} "
                                    f"({first[1].label()}): one key for two memories", x, first[1]))  # fmt: skip
                continue
            nonce = _nonce(ct)
            other = nonces.setdefault(nonce, (rid, ct, x)) if nonce else (rid, ct, x)
            if other[1] != ct:  # the same ciphertext again is a resend, not a nonce reused
                bad.append(Evidence(f"{row_label(x, rid)}: its ciphertext's nonce {nonce.hex()} was already used "
                                    f"(row {short(other[0])}, {other[2].label()})", x, other[2]))  # fmt: skip
            elif kid:
                good.append(Evidence(f"{row_label(x, rid)}: a key and a nonce of its own", x))
    return Result.judge(bad[:4], good[:3])


TOPIC_KEYS = ("topic", "topics", "topic_name")  # what `newMemoryRow` refuses in `metadata`


def metadata_files_nothing(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x, r in memories_written(run):
        found = plain(r).get("metadata")
        meta: dict = found if isinstance(found, dict) else {}
        named = [k for k in TOPIC_KEYS if k in meta]
        if named:
            bad.append(Evidence(f"{row_label(x, r.id)}: its metadata names a topic ({', '.join(f'metadata.{k}' for k in named)}"
                                f" = {str(meta[named[0]])[:40]!r}): it files nothing", x))  # fmt: skip
        else:
            good.append(Evidence(f"{row_label(x, r.id)}: no topic in its metadata", x))
    return Result.judge(bad, good[:3])


ACCOUNT_ID = re.compile(r"account:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def account_by_id(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x, r in memories_written(run):
        p = plain(r)
        about = str(p.get("about") or "")
        if not about.startswith("account:") and not p.get("account"):
            continue
        named = p.get("entity_name")
        if named:
            bad.append(Evidence(f"{row_label(x, r.id)}: a memory about {about} names it ({str(named)[:40]!r} as "
                                "observation.entityName): never the account's name", x))  # fmt: skip
        elif not ACCOUNT_ID.fullmatch(about):
            bad.append(Evidence(f"{row_label(x, r.id)}: about {about[:60]!r}: not account:<the account's uuid>", x))
        else:
            good.append(Evidence(f"{row_label(x, r.id)}: about {about}, by id only", x))
    return Result.judge(bad, good[:3])


def _text_of(row: Any) -> str:
    p = getattr(row, "plaintext", None)
    return str((p.get("text") if isinstance(p, dict) else getattr(p, "text", "")) or "")


def no_copy_to_relabel(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    gone: dict[str, float] = {}  # row id → when a deletion of it was answered
    for x in run.exchanges:
        if x.path == f"{MEMORIES}/delete" and x.method == "POST" and isinstance(x.response, dict):
            for rid in x.response.get("deleted") or []:
                gone.setdefault(str(rid), x.start)
    kept: dict[str, tuple[str, list[str], Exchange]] = {}  # row id → (text, labels, where), as last written
    by_text: dict[str, list[str]] = {}  # text → the row ids that were written with it (an index, not a scan)
    for x in writes(run):
        for r in opened_rows(x):
            if r.verdict != "readable" or kind_of(r) != "memory":
                continue
            text, labels = _text_of(r), labels_of(r)
            before = kept.get(r.id)
            if x.method == "PUT" and before is not None and before[1] != labels:
                good.append(Evidence(f"{row_label(x, r.id)}: relabelled in place, by id", x))
            elif x.method == "POST" and text and before is None:
                copied = next((
                    (rid, kept[rid]) for rid in by_text.get(text, [])
                    if kept[rid][0] == text and kept[rid][1] != labels and gone.get(rid, float("inf")) > x.start
                ), None)  # fmt: skip
                if copied is not None:
                    rid, (_, was, where) = copied
                    bad.append(Evidence(f"{row_label(x, r.id)}: a copy of memory {short(rid)} ({where.label()}) "
                                        f"with labels {labels} for {was}: relabel it by id instead", x, where))  # fmt: skip
            kept[r.id] = (text, labels, x)
            by_text.setdefault(text, []).append(r.id)
    return Result.judge(bad[:4], good[:3])


# The spec's example of POST memories: synthetic bytes for a discarded test key (the first 44
# characters of each, and its kid) — "Do not submit these fixture wraps for a real user."
FIXTURES = {
    "ciphertext": "AQHYBr7qawBSHirhp7FCw/+kUJOg1bupon41gCmcyH0c",
    "owner_wrap": "AQIBAK18oN1WIoJFUcST6J4VUdGVGJJ45NQVsdz+wKgu",
    "self_wrap": "AQBN7UA0MS7gKpdwFyJokbYLMPHh1XG+w4TsosfQFCOm",
}
FIXTURE_KID = "5e45d83427d094d8"


def _fixtures_in(row: dict) -> list[str]:
    blobs = [(k, row.get(k)) for k in ("ciphertext", "owner_wrap", "self_wrap")]
    blobs += [
        ("grantee_wraps[].wrapped_key", w.get("wrapped_key"))
        for w in row.get("grantee_wraps") or []
        if isinstance(w, dict)
    ]
    found = [where for where, blob in blobs if isinstance(blob, str) and blob.startswith(tuple(FIXTURES.values()))]
    return list(dict.fromkeys([*found, *(["kid"] if row.get("kid") == FIXTURE_KID else [])]))


def no_fixture_wraps(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in writes(run, refused=True):  # bytes sent are sent, whatever the answer
        for row in sent_rows(x):
            found = _fixtures_in(row)
            if found:
                bad.append(Evidence(f"{row_label(x, row['id'])}: {', '.join(found)}: the spec's example bytes, "
                                    "for a discarded test key", x))  # fmt: skip
            elif len(good) < 3:
                good.append(Evidence(f"{row_label(x, row['id'])}: its own keys and wraps", x))
    return Result.judge(bad[:4], good)


RULES = [
    Rule(
        "contents.no-secrets",
        "No password, booking reference or key in a memory's text",
        "000",
        "Read first, write as you go",
        "Keep booking references, passwords and keys out of the text; they belong on the account.",
        no_secrets,
        scenarios=("clean",),
        bug="password-in-text",
        catches="saves the account's login password in the reminder's text",
    ),
    Rule(
        "contents.outside-ciphertext",
        "No text, category or name in the HTTP body outside ciphertext",
        "000",
        "Direct HTTP contract › Exact formats",
        "Never put `text`, `categories` or account names in the HTTP body outside ciphertext.",
        outside_ciphertext,
        scenarios=("clean",),
        bug="text-in-body",
        catches="sends the memory's first line beside its ciphertext in a field of its own (`preview`)",
    ),
    Rule(
        "contents.correct-by-id",
        "A correction is a PUT of the same id, never a new memory",
        "000",
        "Read first, write as you go",
        "The person chooses a flight: update the same memory by id, do not add another.",
        correct_by_id,
        scenarios=("clean",),
        bug="correct-as-new",
        catches="posts the corrected text as a new memory beside the one it corrects",
    ),
    Rule(
        "contents.fresh-keys",
        "Each row has its own random key and each ciphertext its own nonce",
        "000",
        "Direct HTTP contract › Exact formats",
        "Each memory has its own random 32-byte key.",
        fresh_keys,
        scenarios=("clean",),
        bug="one-key",
        catches="seals every row of a save with one key",
    ),
    Rule(
        "contents.metadata-files-nothing",
        "A topic is never named in a memory's metadata",
        "000",
        "Exact formats › `ciphertext`",
        "`metadata` (an object of free notes; it files nothing, so a topic never goes there)",
        metadata_files_nothing,
        scenarios=("clean",),
        bug="topic-in-metadata",
        catches="names the memory's topic in its metadata (`metadata.topic`) besides filing it by `about`",
    ),
    Rule(
        "contents.account-by-id",
        "A memory about an account names it by its id only",
        "000",
        "Exact formats › `ciphertext`",
        'about a granted account: `{"v":2,"row_id":"<id>","observation":{"content":"Uses squash merges."},'
        '"about":["account:<account uuid>"]}` (never the account\'s name).',
        account_by_id,
        scenarios=("accounts",),
        bug="account-name-in-memory",
        catches="files its memory about the account with the service's name as observation.entityName",
    ),
    Rule(
        "contents.no-copy-to-relabel",
        "A memory is relabelled by id, never copied under other labels",
        "000",
        "Topics › Attach, move or detach",
        "Do not copy a memory to relabel it.",
        no_copy_to_relabel,
        scenarios=("clean",),
        bug="copy-to-relabel",
        catches="adds a label by posting a copy of its reminder under the new labels",
    ),
    Rule(
        "contents.no-fixture-wraps",
        "The spec's example bytes are never sent",
        "001",
        "POST /api/agent/context/memories",
        "Do not submit these fixture wraps for a real user.",
        no_fixture_wraps,
        scenarios=("other-connections",),
        bug="fixture-wraps",
        catches="wraps each row to the other connections with the spec example's self_wrap bytes",
    ),
]
