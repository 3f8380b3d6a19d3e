"""What Tab offers on a command line: verbs, then a verb's flags, then the values its argument takes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from decoy_lab.workbench.verbs.table import BY_NAME, Arg, Verb, verbs_for


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
