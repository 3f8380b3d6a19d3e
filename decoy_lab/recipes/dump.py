"""Open any blob a user pastes: find its layout, say how sure that is, then run the matching
recipe with a trace.

One place for "what does this base64 hold?", shared by `%decoy dump` and `decoy-lab dump`.
A VAULT blob opens with a 32-byte memory key; an agent envelope with an agent's RSA key; an
owner envelope with the owner's RSA key (the sandbox's simulated phone has one). Without a
fitting key the trace ends on the layout it found; bytes no layout fits are said to be so,
never reported as a failed envelope.
"""

from __future__ import annotations

from pathlib import Path

from decoy_lab.errors import DecoyError, WireFormatError
from decoy_lab.recipes import account_records, sealing
from decoy_lab.recipes.trace import Source, Trace
from decoy_lab.text import plural
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

_NEEDS = {
    "vault": "a VAULT blob opens with its 32-byte memory key (--key)",
    "agent_envelope": "an agent envelope opens with the agent's private key",
    "owner_envelope": "an owner envelope opens with the owner's private key",
}
_NAMES = {"vault": "a VAULT blob", "owner_envelope": "an owner envelope", "agent_envelope": "an agent envelope"}
# RSA-OAEP output is as long as the modulus: a wrapped key of these lengths fits these keys.
RSA_SIZES = {128: 1024, 256: 2048, 384: 3072, 512: 4096}


def identify(raw: bytes) -> tuple[str | None, str, wire.Layout | None]:
    """(kind, a sentence saying how sure, layout): the layout these bytes fit best, or None and
    why none fits. A VAULT header, or a key length that is an RSA modulus size, is a good fit
    (bytes with that start that do not parse are a damaged blob of that kind, layout None); an
    envelope whose key length is no RSA size fits the layout only loosely."""
    loose: tuple[str, str, wire.Layout] | None = None
    damaged: tuple[str, str] | None = None
    misfits: list[str] = []
    for kind in wire.KINDS:
        sign = _signature(raw, kind)
        try:
            layout = wire.parse(raw, kind)
        except WireFormatError as exc:
            why = str(exc).rsplit(" (", 1)[0]
            misfits.append(f"as {_NAMES[kind]}, {why}")
            if sign and damaged is None:
                damaged = (kind, f"looks like a damaged {_NAMES[kind].split(' ', 1)[1]}: {sign}, but {why}")
            continue
        if sign:
            detail = ""
            if kind == "vault":
                n = layout["ciphertext"].length
                detail = f", a 12-byte nonce, {plural(n, 'byte')} of ciphertext and a 16-byte tag"
            return kind, f"looks like {_NAMES[kind]}: {sign}{detail}", layout
        if loose is None:
            n = layout["wrapped_key"].length
            sizes = ", ".join(str(s) for s in RSA_SIZES)
            loose = (
                kind,
                f"fits the layout of {_NAMES[kind]} only loosely: key length {n} is no RSA key size "
                f"({sizes} for RSA-1024 to RSA-4096), so probably it is not one",
                layout,
            )
    if damaged is not None:
        return damaged[0], damaged[1], None
    if loose is not None:
        return loose
    text = _as_text(raw)
    return (
        None,
        "no known layout fits: " + "; ".join(misfits) + (f". It reads as UTF-8 text: {text}" if text else ""),
        None,
    )


def _signature(raw: bytes, kind: str) -> str:
    """What in `raw` marks it as `kind` (empty when nothing does): a header, or an RSA-sized key length."""
    if kind == "vault":
        return "header 01 01 (version 1, mode VAULT)" if raw[:2] == wire.VAULT_HEADER else ""
    header = ""
    if kind == "owner_envelope":
        if raw[:2] != wire.OWNER_HEADER:
            return ""
        header, raw = "header 01 02, ", raw[2:]
    n = int.from_bytes(raw[:2], "big") if len(raw) >= 2 else 0
    return f"{header}key length {n} matches RSA-{RSA_SIZES[n]}" if n in RSA_SIZES else ""


def _as_text(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    if not text.isprintable():
        return ""
    return repr(text if len(text) <= 80 else text[:80] + "…")


def open_blob(
    blob: bytes | str | wire.Layout,
    *,
    key: bytes | None = None,
    key_b64: str | None = None,
    key_file: str | Path | None = None,
    private_key: AgentKey | None = None,
    record: str | None = None,
) -> Trace:
    """Identify `blob`'s layout and open it with whichever key fits its kind; every step is in
    the Trace, and `trace.verdict` says which layout it found and how sure that is.

    Without a fitting key the trace ends on the annotated layout. A failure never raises: it is
    the failing step of the returned trace. `record` reads the blob as one of the account
    family's record kinds (wire/layouts.py RECORDS: "credential", "field", …), its fields named
    for what they carry, and opens it as that record (the owner's key for what is sealed to the
    owner: the owner's-eye check).
    """
    trace = Trace("open blob")
    try:
        raw = blob.data if isinstance(blob, wire.Layout) else blob
        if isinstance(raw, str):
            with trace.step("base64 decode", inputs={"characters": len(raw)}) as s:
                raw = wire.b64decode(raw, field="blob")
                s.output = f"{len(raw)} bytes"
                s.data = raw
        raw = bytes(raw)
        if key_b64 is not None:
            key = wire.b64decode(key_b64, field="key")
        if key_file is not None:
            private_key = AgentKey.from_pem(Path(key_file).read_text())
        if record is None and isinstance(blob, wire.Layout) and blob.kind in wire.RECORDS:
            record = blob.kind
        if record is not None:
            _open_record(trace, raw, record, key=key, private_key=private_key)
            return trace
        kind: str | None
        if isinstance(blob, wire.Layout):
            kind, verdict = blob.kind, f"read as {_NAMES[blob.kind]}, as asked"
        else:
            kind, verdict, _ = identify(raw)
        trace.verdict = verdict
        trace.title = f"open {kind.replace('_', ' ')}" if kind else f"dump {len(raw):,} bytes"
        if kind == "vault" and key is not None:
            sealing.open_vault(key, raw, trace=trace)
        elif kind == "agent_envelope" and private_key is not None:
            sealing.unwrap_as_agent(raw, private_key, trace=trace)
        elif kind == "owner_envelope" and private_key is not None:
            sealing.unwrap_as_owner(raw, private_key, trace=trace)
        else:
            trace.claim(
                Source(
                    "layout",
                    lambda inputs: open_blob(inputs["blob"], key=key, private_key=private_key),
                    inputs={"blob": raw},
                    params={"kind": kind},
                )
            )
            if kind is None:
                trace.add("identify the layout", ok=False, data=raw, inputs={"bytes": len(raw)}, reason=verdict)
                return trace
            sealing.parse_step(raw, kind, trace)
            trace.stopped = f"not opened: {_NEEDS[kind]}"
    except DecoyError as exc:
        if trace.failed is None:  # failed outside a step (a bad key argument)
            trace.add("read the key", ok=False, reason=str(exc))
    return trace


_RECORD_NEEDS = {
    "owner": "it opens with the owner's private key (the sandbox's owner has one)",
    "agent": "it opens with this connection's private key",
    "field_key": "a field opens with its 32-byte field key (--key)",
}


def _open_record(trace: Trace, raw: bytes, record: str, *, key: bytes | None, private_key: AgentKey | None) -> None:
    """`raw` read as the record kind `record`: opened when the key it needs is given, else its
    annotated layout (a step that fails stops the trace, as every recipe's does)."""
    spec = wire.RECORDS.get(record)
    if spec is None:
        why = f"unknown record kind {record!r}; known: {', '.join(wire.RECORDS)}"
        trace.add("identify the record kind", ok=False, data=raw, inputs={"record": record}, reason=why)
        return
    trace.title = f"open {record.replace('_', ' ')}"
    trace.verdict = f"read as {record.replace('_', ' ')} ({spec.layout.replace('_', ' ')}), as asked: {spec.spec}"
    if (key if spec.opens_with == "field_key" else private_key) is not None:
        account_records.open_record(record, raw, key=key, private_key=private_key, trace=trace)
        return
    trace.claim(
        Source(
            "layout",
            lambda inputs: open_blob(inputs["blob"], key=key, private_key=private_key, record=record),
            inputs={"blob": raw},
            params={"kind": record},
        )
    )
    sealing.parse_step(raw, record, trace)
    trace.stopped = f"not opened: {_RECORD_NEEDS[spec.opens_with]}"
