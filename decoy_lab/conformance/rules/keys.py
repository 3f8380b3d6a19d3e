"""Rules on a row's keys and its end: its self_wrap holds the row's key, a label removed rotates
the key, a rotation carries its wraps; a deletion spares a topic in use and is verified."""

from __future__ import annotations

import base64
from typing import Any

from decoy_lab.conformance.rulebook import MEMORIES, Evidence, Exchange, Result, Rule, Run, short
from decoy_lab.conformance.rules.base import opened_rows, reads, row_label, sent_rows, topic_of, writes
from decoy_lab.errors import DecoyError
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

KEY_PAYLOAD = 32 + 16  # AES-256-GCM of the raw 32-byte memory key, and its tag
DELETE = f"{MEMORIES}/delete"


def registered_sizes(run: Run) -> set[int]:
    """The RSA block sizes (bytes) of the agent public keys sent at pairing (`agent_public_key`)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    sizes = set()
    for x in run.where("POST", "/oauth/device"):
        spki = (x.request or {}).get("agent_public_key") if isinstance(x.request, dict) else None
        try:
            pub = serialization.load_der_public_key(base64.b64decode(str(spki)))
        except (ValueError, TypeError):
            continue
        if isinstance(pub, rsa.RSAPublicKey):
            sizes.add(pub.key_size // 8)
    return sizes


def _owner_kid(x: Exchange, row: dict) -> str:
    """The kid of the key the owner's app opened for this row (the sent kid when it did not open)."""
    opened = next((r for r in opened_rows(x) if r.id == row["id"] and r.verdict == "readable"), None)
    return opened.kid if opened is not None and opened.kid else str(row.get("kid") or "")


def self_wrap_opens(run: Run) -> Result:
    key = AgentKey.from_pem(run.agent_key) if run.agent_key else None
    sizes = registered_sizes(run)
    bad: list[str] = []
    good: list[str] = []
    for x in writes(run):
        for row in sent_rows(x):
            wrap = row.get("self_wrap")
            if not isinstance(wrap, str) or not wrap:
                continue  # no self_wrap at all is rows.self-wrap's to judge
            label = row_label(x, row["id"])
            why = _opens_to_owner_key(wrap, key, _owner_kid(x, row)) if key else _fits(wrap, sizes)
            if why:
                bad.append(Evidence(f"{label}: {why}", x))
            elif key is not None:
                good.append(Evidence(f"{label}: self_wrap opens with the agent's key to the key owner_wrap holds", x))
            else:
                good.append(Evidence(f"{label}: self_wrap is an RSA-OAEP wrap that fits the paired key (to check "
                                     "that it opens to owner_wrap's key, give the agent's key: --agent-key PEM)", x))  # fmt: skip
    return Result.judge(bad, good[:3])


def _opens_to_owner_key(wrap: str, key: AgentKey, owner_kid: str) -> str:
    try:
        got = sealing.unwrap_as_agent(wrap, key)
    except DecoyError as exc:
        return f"self_wrap does not open with the agent's key: {exc}"
    if owner_kid and wire.kid(got) != owner_kid:
        return f"self_wrap holds another key (kid {wire.kid(got)}), not the one owner_wrap holds (kid {owner_kid})"
    return ""


def _fits(wrap: str, sizes: set[int]) -> str:
    """What is wrong with self_wrap's layout for the agent key registered at pairing ("" if nothing)."""
    try:
        layout = wire.parse(wire.b64decode(wrap, field="self_wrap"), "agent_envelope")
    except DecoyError as exc:
        return f"self_wrap is not a headerless agent envelope: {exc}"
    n = len(layout.value("wrapped_key"))
    if sizes and n not in sizes:
        return f"self_wrap's RSA-OAEP block is {n} bytes; the agent key registered at pairing gives {min(sizes)}"
    if n not in (256, 384, 512):
        return f"self_wrap's RSA-OAEP block is {n} bytes, no RSA key size"
    sealed = len(layout.value("ciphertext")) + len(layout.value("tag"))
    if sealed != KEY_PAYLOAD:
        return f"self_wrap seals {sealed - 16} bytes; its plaintext is the raw 32-byte memory key"
    return ""


def _labels(plain: Any) -> set[str]:
    """A memory plaintext's labels: its categories and its one `about` (owner's-eye entry or Plain)."""
    if isinstance(plain, dict):
        return {str(c) for c in plain.get("categories") or []} | (
            {str(plain["about"])} if plain.get("about") else set()
        )
    cats = getattr(plain, "categories", None) or []
    about = getattr(plain, "about_label", None)
    return {str(c) for c in cats} | ({str(about)} if about else set())


def _known(run: Run) -> tuple[dict[str, list[tuple[float, str]]], dict[str, list[tuple[float, set[str]]]]]:
    """Per memory id that an edit (PUT) names, every kid (with when) it was sent or served with, and
    every label set seen. Only edited ids are ever looked up, so a big vault's other rows are skipped."""
    edited = {
        str(x.request.get("id")) for x in writes(run, refused=True) if x.method == "PUT" and isinstance(x.request, dict)
    }
    kids: dict[str, list[tuple[float, str]]] = {}
    labels: dict[str, list[tuple[float, set[str]]]] = {}
    if not edited:
        return kids, labels
    for x in run.exchanges:
        if x.path != MEMORIES or not x.answered or (x.status or 0) >= 300:
            continue
        body = x.response if x.method == "GET" and isinstance(x.response, dict) else {}
        for m in body.get("memories") or []:
            if isinstance(m, dict) and isinstance(m.get("kid"), str) and str(m.get("id")) in edited:
                kids.setdefault(str(m.get("id")), []).append((x.start, m["kid"]))
        for r in sent_rows(x) if x.method in ("POST", "PUT") else []:
            if isinstance(r.get("kid"), str) and r["id"] in edited:
                kids.setdefault(r["id"], []).append((x.start, r["kid"]))
        for r in opened_rows(x):
            if r.verdict == "readable" and r.kind in ("memory", "") and r.id in edited:
                labels.setdefault(r.id, []).append((x.start, _labels(r.plaintext)))
    return kids, labels


def _before(seen: list[tuple[float, Any]], t: float) -> Any:
    earlier = [v for at, v in seen if at < t]
    return earlier[-1] if earlier else None


def rotation_wraps(run: Run) -> Result:
    kids, _ = _known(run)
    bad: list[str] = []
    good: list[str] = []
    for x in writes(run, refused=True):  # what the rotation sent, whether the server kept it or not
        if x.method != "PUT" or not isinstance(x.request, dict) or not isinstance(x.request.get("kid"), str):
            continue
        rid, kid = str(x.request.get("id")), x.request["kid"]
        old = _before(kids.get(rid, []), x.start)
        if old is None or old == kid:
            continue
        missing = [k for k in ("owner_wrap", "self_wrap") if not isinstance(x.request.get(k), str)]
        if missing:
            refused = f" (refused {x.status} {x.code})" if x.refused else ""
            bad.append(
                Evidence(
                    f"{row_label(x, rid)}: a new kid ({kid}, was {old}) without {' and '.join(missing)}{refused}", x
                )
            )
        elif x.refused:
            continue
        else:
            good.append(Evidence(f"{row_label(x, rid)}: rotated to kid {kid} with owner_wrap and self_wrap", x))
    return Result.judge(bad, good[:3])


def owner_removed(run: Run, row_id: str) -> set[str]:
    """The labels the owner removed from this row (a staged relabel): the owner's removal, not the agent's."""
    found = set()
    for e in run.staged("before"):
        words = str(e.get("result") or "").split()
        if len(words) == 4 and words[0] == "removed" and words[3] == row_id:
            found.add(words[1].split(":", 1)[-1])
            found.add(words[1])
    return found


def rotate_on_label_removal(run: Run) -> Result:
    kids, labels = _known(run)
    bad: list[str] = []
    good: list[str] = []
    for x in writes(run):
        if x.method != "PUT" or not isinstance(x.request, dict):
            continue
        rid = str(x.request.get("id"))
        before, now = _before(labels.get(rid, []), x.start), next((r for r in opened_rows(x) if r.id == rid), None)
        if before is None or now is None or now.verdict != "readable":
            continue
        gone = sorted(before - _labels(now.plaintext) - owner_removed(run, rid))
        if not gone:
            continue
        old, kid = _before(kids.get(rid, []), x.start), x.request.get("kid")
        if kid is None or kid == old:
            bad.append(Evidence(f"{row_label(x, rid)}: removed the label {gone[0]!r} and kept the key (kid {old})", x))
        else:
            good.append(Evidence(f"{row_label(x, rid)}: removed {gone[0]!r} with a new key (kid {kid})", x))
    return Result.judge(bad, good[:3])


def delete_verified(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in run.where("POST", DELETE):
        if not x.answered or not isinstance(x.response, dict):
            continue
        asked = [str(i) for i in (x.request or {}).get("ids") or []] if isinstance(x.request, dict) else []
        deleted = [str(i) for i in x.response.get("deleted") or []]
        later = [rd for rd in reads(run) if rd.start > x.start and rd.answered and (rd.status or 0) < 300]
        if not asked or not deleted:
            continue
        verifying = [rd for rd in later if not set(deleted) & set(rd.served_ids)]
        if verifying:
            good.append(Evidence(f"{x.label()}: verified by {verifying[0].label()}, which no longer lists "
                                 f"the {len(deleted)} deleted rows", x, verifying[0]))  # fmt: skip
        elif later:
            still = next(i for i in deleted if i in later[-1].served_ids)
            bad.append(Evidence(f"{x.label()}, row {short(still)}: deleted, and every later read still lists it "
                                f"(last: {later[-1].label()}): the deletion was never verified", x, later[-1]))  # fmt: skip
        else:
            bad.append(
                Evidence(f"{x.label()}, row {short(deleted[0])}: deleted, and never read again to verify it is gone", x)
            )
    return Result.judge(bad, good[:3])


def keep_used_topics(run: Run) -> Result:
    used = {topic_of(r).removeprefix("topic:") for x in writes(run) for r in opened_rows(x) if topic_of(r)}
    used |= {str((m.get("topic") or {}).get("id") or "").removeprefix("topic:") for m in run.app_view
             if m.get("kind") == "memory" and isinstance(m.get("topic"), dict)}  # fmt: skip
    bad: list[str] = []
    good: list[str] = []
    for x in run.where("POST", DELETE):
        asked = [str(i) for i in (x.request or {}).get("ids") or []] if isinstance(x.request, dict) else []
        hit = [i for i in asked if i in used]
        if hit:
            bad.append(
                Evidence(f"{x.label()}, row {short(hit[0])}: deletes a topic that a saved memory is filed under", x)
            )
        elif asked:
            good.append(Evidence(f"{x.label()}: none of its {len(asked)} ids is a topic a memory uses", x))
    return Result.judge(bad, good[:3])


RULES = [
    Rule(
        "rows.self-wrap-opens",
        "self_wrap holds the row's own key, wrapped to the paired agent key",
        "000",
        "Direct HTTP contract › Exact formats",
        "headerless envelope to that connection's public key: `[2-byte BE key length][RSA-OAEP-SHA256 wrapped "
        "AES-256 key][12-byte IV][AES-256-GCM ciphertext][16-byte tag]`, whose plaintext is the raw 32-byte memory key.",
        self_wrap_opens,
        scenarios=("clean",),
        bug="self-wrap-other-key",
        catches="self_wrap wraps a random key, not the row's (seen with --agent-key)",
        needs_agent_key=True,
    ),
    Rule(
        "writes.rotate-on-label-removal",
        "Removing a label rotates the memory's key",
        "000",
        "Direct HTTP contract › Exact formats",
        "When the author removes a label (a category, its topic or account), rotate the key so a connection "
        "that only had it through that label stops getting it",
        rotate_on_label_removal,
        scenarios=("clean",),
        bug="no-rotation",
        catches="removes a category and re-seals with the same key",
    ),
    Rule(
        "writes.rotation-wraps",
        "A key rotation carries owner_wrap and self_wrap of the new key",
        "000",
        "Direct HTTP contract › Exact formats",
        "A rotation includes the new `kid`, `owner_wrap`, `self_wrap` and replacement grantee wraps atomically",
        rotation_wraps,
        scenarios=("clean",),
        bug="rotate-without-wraps",
        catches="sends a new kid and ciphertext without the new key's wraps",
    ),
    Rule(
        "deletes.keep-used-topics",
        "A topic a saved memory is filed under is never deleted",
        "000",
        "Topics",
        "Do not delete a topic that a committed memory may already use.",
        keep_used_topics,
        scenarios=("clean",),
        bug="delete-used-topic",
        catches="deletes its topic's row along with the reminder, while its memory is filed under it",
    ),
    Rule(
        "deletes.verified",
        "A deletion is read back to verify it",
        "000",
        "Verify the result",
        "When the person requests deletion, inspect both deleted and refused IDs, then verify the requested deletion.",
        delete_verified,
        scenarios=("clean",),
        bug="no-verify-delete",
        catches="deletes and stops: never reads again to see the row gone",
    ),
]
