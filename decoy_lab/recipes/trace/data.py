"""A trace as plain data, for JSON export and the recipe widget: each step's words, its bytes with
secrets zeroed, its field tree, masked and changed runs."""

from __future__ import annotations

from decoy_lab.recipes.trace.step import COLOURS, Step, TraceLike, as_bytes
from decoy_lab.recipes.trace.wording import dump_args, headline, step_lines, tone
from decoy_lab.wire.hexdump import PALETTE, bytes_word, secret_label
from decoy_lab.wire.layouts import guess_kind


def _masked_runs(step: Step, reveal: bool) -> list[dict]:
    args = dump_args(step)
    if args is None or reveal:
        return []
    data, fields, secret = args
    return [
        {"start": f.offset, "end": f.end, "label": secret_label(data[f.offset : f.end])}
        for f in fields
        if f.name in secret
    ]


def masked_bytes(step: Step, reveal: bool) -> bytes | None:
    """The step's bytes with every secret run zeroed (unless `reveal`): what leaves the kernel."""
    if step.data is None:
        return None
    out = bytearray(as_bytes(step.data))
    for run in _masked_runs(step, reveal):
        out[run["start"] : run["end"]] = bytes(run["end"] - run["start"])
    return bytes(out)


def _step_words(trace: TraceLike, i: int, reveal: bool) -> dict:
    """What every plain-data view of step `i` holds: status, words, masked and changed runs."""
    step = trace.steps[i]
    return {
        "name": step.name,
        "ok": step.ok,
        "mark": step.status,
        "lines": [list(row) for row in step_lines(trace, i, reveal)],
        "masked": _masked_runs(step, reveal),
        "changed": [list(r) for r in trace.changed(step)],
    }


def step_dict(trace: TraceLike, i: int, reveal: bool) -> dict:
    step = trace.steps[i]
    data = masked_bytes(step, reveal)
    return {
        **_step_words(trace, i, reveal),
        "hex": data.hex() if data is not None else None,
        "fields": [{"name": f.name, "offset": f.offset, "length": f.length, "note": f.note} for f in step.fields],
    }


# Fields that belong together in the tree: (group name, its members, what it is).
GROUPS = (
    ("header", ("version", "mode"), "SealedBlob version and mode"),
    ("wrapped content key", ("key_length", "wrapped_key"), "the RSA-OAEP-SHA256 part"),
    ("sealed payload", ("nonce", "iv", "ciphertext", "tag"), "the AES-256-GCM part"),
)


def field_tree(step: Step, reveal: bool) -> dict:
    """The nested tree a view links with the hex: the blob → groups of fields → fields (and the
    members of a JSON plaintext), each node with its byte range [start, end)."""
    args = dump_args(step)
    data = args[0] if args else b""
    n = len(data)
    fields, secret = (args[1], args[2]) if args else ([], set())
    leaves = [
        {
            "name": f.name,
            "start": max(0, f.offset),
            "end": min(n, f.end),
            "note": secret_label(data[f.offset : f.end]) if f.name in secret and not reveal else f.note,
            "children": [],
        }
        for f in fields
    ]
    children: list[dict] = []
    for leaf in leaves:
        group = next((g for g in GROUPS if leaf["name"] in g[1]), None)
        members = [x for x in leaves if group and x["name"] in group[1]]
        if group is None or len(members) < 2:
            children.append(leaf)
        elif members[0] is leaf:
            children.append(
                {
                    "name": group[0],
                    "start": members[0]["start"],
                    "end": members[-1]["end"],
                    "note": group[2],
                    "children": members,
                }
            )
    if args and not fields and not secret:
        children = _json_members(data, 0)
    names = {f.name for f in fields}
    kind = guess_kind(data).replace("_", " ") if "tag" in names else ("JSON" if children and not fields else "bytes")
    return {"name": kind, "start": 0, "end": n, "note": bytes_word(n), "children": children}


def _json_members(data: bytes, base: int) -> list[dict]:
    """The members of a UTF-8 JSON object or array with their byte ranges (nothing otherwise)."""
    from decoy_lab.wire.jsonspans import spans

    try:
        return spans(data, base)
    except (ValueError, IndexError):
        return []


def _blob_index(data: bytes | None, blobs: list[str], index: dict[bytes, int]) -> int | None:
    """The index of `data` in the view's list of distinct blobs (added when new)."""
    if data is None:
        return None
    at = index.setdefault(data, len(blobs))
    if at == len(blobs):
        blobs.append(data.hex())
    return at


def _shown_output(step: Step, reveal: bool) -> bytes | None:
    """A step's output when it is bytes a view may show in full (a decrypted plaintext, a built
    blob); a secret output stays a fingerprint unless `reveal`."""
    out = step.output
    if isinstance(out, (bytes, bytearray, memoryview)) and len(out) and (reveal or not step.secret_output):
        return bytes(out)
    return None


def _bytes_tree(data: bytes) -> dict:
    members = _json_members(data, 0)
    return {
        "name": "JSON" if members else "bytes",
        "start": 0,
        "end": len(data),
        "note": bytes_word(len(data)),
        "children": members,
    }


def view(trace: TraceLike, reveal: bool = False) -> dict:
    """Everything the recipe widget draws, as plain data: each step's words, its bytes (once per
    distinct blob, secrets zeroed), field tree, masked and changed runs, and whether editing its
    bytes re-runs the recipe."""
    blobs: list[str] = []
    index: dict[bytes, int] = {}
    steps = []
    for i, step in enumerate(trace.steps):
        data = masked_bytes(step, reveal)
        out = _shown_output(step, reveal)
        steps.append(
            {
                **_step_words(trace, i, reveal),
                "colour": COLOURS[step.ok],
                "blob": _blob_index(data, blobs, index),
                "tree": field_tree(step, reveal) if data is not None else None,
                "out": _blob_index(out, blobs, index),
                "out_tree": _bytes_tree(out) if out is not None else None,
                "input": trace.editable(step),
            }
        )
    return {
        "title": trace.title or "trace",
        "headline": headline(trace),
        "verdict": trace.verdict,
        "colour": COLOURS[tone(trace)],
        "start": trace.start if trace.steps else 0,
        "blobs": blobs,
        "steps": steps,
        "editable": trace.source is not None,
        "palette": list(PALETTE),
    }
