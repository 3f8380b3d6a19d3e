"""The spec's normative sentences, found by their wording, per section (for inventory.py and its test).

`sentences(doc, text)` splits a spec file into (section, sentence) pairs in the sections the
inventory covers; `normative(sentence)` says whether a sentence binds someone: it says must,
never, always, only, exactly, required or do not, or it opens with an imperative verb.

- `000` (the memory contract, markdown): every section but the two worked examples' code; a code
  block's `//` comments are the contract's voice too ("update the same memory by id, do not add
  another") and are kept, joined per comment.
- `001` (the Agent API, one operation per `=== /path` block, the rest on its first line): the
  pairing and access text of the first line (read before, write after; Connect; The loop;
  Refusals; Step up; Memories; When the answer is no), and the `description`s of the operations
  a memory agent uses (device grant, policies, grant-request, the memory routes).
"""

from __future__ import annotations

import re

NORMATIVE = re.compile(r"\b(must|never|always|only|exactly|required|do not|don't|rather than)\b", re.I)
IMPERATIVES = frozenset(
    [
        "Use",
        "Keep",
        "Read",
        "Check",
        "Send",
        "Write",
        "Follow",
        "Reuse",
        "Give",
        "Pass",
        "Treat",
        "Normalize",
        "Delete",
        "Inspect",
        "Retain",
        "Decrypt",
        "Resolve",
        "Invite",
        "Do",
        "Re-seal",
        "Rotate",
        "Include",
        "Print",
        "Save",
        "Correct",
        "Apply",
        "Capture",
        "Put",
        "Ask",
        "Wait",
        "Poll",
        "Hand",
        "Tell",
        "Stop",
        "Carry",
        "Report",
        "Compare",
        "Restore",
        "Verify",
        "Attach",
        "Name",
        "Request",
        "Decide",
        "Persist",
        "Fetch",
        "Open",
        "Update",
        "Complete",
        "Reconcile",
        "Describe",
        "Filing",
        "Create",
        "Sending",
        "Re-read",
        "Retry",
        "Continue",
        "Decide",
        "Resend",
        "Copy",
    ]
)
SECTIONS_001_LINE1 = (
    ("Agents and the vault", "**Agents and the vault: read before, write after.**", "## Connect"),
    ("Connect", "## Connect", "## Once granted"),
    ("Access › The loop", "**The loop.**", "**Refusals.**"),
    ("Access › Refusals", "**Refusals.**", "**Expiry.**"),
    ("Access › Step up", "**Step up.**", "**`everything`**"),
    ("Access › Memories", "**Memories.** `memory.save`", "**Personal info.**"),
    ("When the answer is no", "**3. When the answer is no", "**4. What approval proves"),
    ("Memories (tag)", "**Memories: the part of the vault agents read first.**", "**One graph, many agents.**"),
    ("Memories (tag) › Who can change what", "**Who can change what.**", "**Topics.**"),
)
OPERATIONS_001 = (
    "/oauth/device",
    "/api/agent/policies",
    "/api/agent/grant-request",
    "/api/agent/context/memory-grantees",
    "/api/agent/context/memories",
    "/api/agent/context/memories/delete",
    "/api/agent/context/memory-wraps",
)
YAML_KEY = re.compile(
    r" (?:tags|security|responses|content|properties|type|items|enum|example|schema|required|format|headers|"
    r"parameters|requestBody|x-[a-z-]+|operationId|summary|nullable|pattern|minimum|maxItems|minItems|"
    r"additionalProperties|application/json|'\d{3}'|\$ref|in|name|get|post|put|delete|---)\s*:"
)
DESCRIPTION = re.compile(r"(?:description|x-permissions): (?:>-|\|-|\||')?\s*")
SPLIT = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?:-\s+|#\s+)?(?=[A-Z`\[*\"(0-9])|(?<=:)\s+(?=`\d{3}`|\*\*)")
ABBREV = re.compile(r"\b(e\.g|i\.e|etc|vs)\.$")


def _sentences_of(text: str) -> list[str]:
    out: list[str] = []
    for piece in SPLIT.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if out and ABBREV.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _clean(s: str) -> str:
    return s.strip().strip("-").strip()


def sentences_000(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    heading, lead = "", ""
    in_code = False
    comment: list[str] = []
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            stripped = line.strip()
            if stripped.startswith("//"):
                comment.append(stripped[2:].strip())
                continue
            if comment:
                out += [(f"{heading} › code", s) for s in _sentences_of(" ".join(comment))]
                comment = []
            continue
        if line.startswith("#"):
            heading, lead = line.lstrip("#").strip(), ""
            continue
        if not line.strip() or line.startswith("<"):
            continue
        body = line.strip()
        if body.startswith("|"):
            cells = [c.strip() for c in body.strip("|").split("|")]
            if set("".join(cells)) <= set("- ") or cells[0] in ("Operation",):
                continue
            out += [(f"{heading} › {cells[0]}", s) for s in _sentences_of(cells[-1])]
            continue
        m = re.match(r"^(?:[-*]|\d+\.)?\s*\*\*([^*]+?)\.?\*\*", body)
        if m:
            lead = m.group(1).strip().rstrip(".")
        section = f"{heading} › {lead}" if lead else heading
        out += [(section, s) for s in _sentences_of(re.sub(r"^(?:[-*]|\d+\.)\s+", "", body))]
    return [(sec, _clean(s)) for sec, s in out if _clean(s)]


def sentences_001(text: str) -> list[tuple[str, str]]:
    lines = text.split("\n")
    first = lines[0]
    out: list[tuple[str, str]] = []
    for name, start, end in SECTIONS_001_LINE1:
        i = first.find(start)
        j = first.find(end, i + 1)
        if i < 0 or j < 0:
            continue
        out += [(name, s) for s in _sentences_of(first[i:j])]
    blocks = re.split(r"\n(?==== )", text)
    for block in blocks:
        head = block.split("\n", 1)[0].removeprefix("=== ").strip()
        if head not in OPERATIONS_001:
            continue
        for op in re.split(r"(?:^|\n)(?=get: |--- (?:get|post|put|delete) |post: )", block.split("\n", 1)[-1]):
            verb = op.removeprefix("--- ").split(" ", 1)[0].rstrip(":").upper()
            for m in DESCRIPTION.finditer(op):
                rest = op[m.end() :]
                stop = YAML_KEY.search(rest)
                value = rest[: stop.start()] if stop else rest
                out += [(f"{verb} {head}", s) for s in _sentences_of(value.strip().strip("'"))]
    return [(sec, _clean(s)) for sec, s in out if len(_clean(s)) > 12]


def sentences(doc: str, text: str) -> list[tuple[str, str]]:
    return sentences_000(text) if doc == "000" else sentences_001(text)


def _first_word(s: str) -> str:
    s = re.sub(r"^(?:\*\*[^*]*\*\*:?|\d+\.|[-*])\s*", "", s.strip())
    m = re.match(r"[A-Za-z-]+", s)
    return m.group(0) if m else ""


def normative(sentence: str) -> bool:
    return bool(NORMATIVE.search(sentence)) or _first_word(sentence) in IMPERATIVES


def flat(text: str) -> str:
    """Whitespace collapsed and code comments' `//` dropped: how a sentence is looked up in the spec."""
    return " ".join(re.sub(r"(^|\s)//\s?", " ", text).split())
