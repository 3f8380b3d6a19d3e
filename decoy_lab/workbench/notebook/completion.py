"""Tab on a `%decoy` line: verbs, flags, then topic names, categories and ids from the latest
load, and account and address ids from the latest account list, offered through an IPython
context matcher (and the same names suggest a fix for a typo).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from decoy_lab.recipes.account_records import FIELD_TYPES
from decoy_lab.workbench import verbs

if TYPE_CHECKING:
    from decoy_lab.vault.account_list import AccountEntry
    from decoy_lab.vault.read import Vault

NB = verbs.NOTEBOOK


def sources(
    v: Vault | None, accounts: Sequence[AccountEntry] = (), addresses: Sequence[str] = ()
) -> dict[str, Callable[[], list[str]]]:
    """What completion and suggestions offer: names and ids from the latest load (`v`), the ids
    of the accounts the latest account list held and of their addresses (`accounts`), and the
    ids the latest address list held (`addresses`: a Personal Alias belongs to no account)."""

    def column(frame: str, col: str) -> Callable[[], list[str]]:
        def read() -> list[str]:
            if v is None:
                return []
            df = getattr(v, frame)
            if col not in df:
                return []
            values = df[col].explode() if col == "categories" else df[col]
            return [str(x) for x in values.dropna().unique()]

        return read

    return {
        "topic": lambda: ["You", *column("topics", "name")()],
        "category": column("memories", "categories"),
        "id": column("memories", "id"),
        "permission": lambda: list(verbs.PERMISSIONS),
        "address_status": lambda: list(verbs.ADDRESS_STATUSES),
        "field_type": lambda: list(FIELD_TYPES),
        "set_status": lambda: list(verbs.SET_STATUSES),
        "on_off": lambda: list(verbs.ON_OFF),
        "account": lambda: [a.id for a in accounts],
        "decoy": lambda: list(dict.fromkeys([*(a.decoy_id for a in accounts if a.decoy_id), *addresses])),
    }


def complete(
    line: str, vault: Vault | None, accounts: Sequence[AccountEntry] = (), addresses: Sequence[str] = ()
) -> list[str]:
    """What Tab offers at the end of `line` (a `%decoy …` line up to the cursor), after loading
    `vault` and listing `accounts` and `addresses`."""
    parts = line.lstrip().split(None, 1)
    return verbs.complete(parts[1] if len(parts) > 1 else "", NB, sources(vault, accounts, addresses))


def matcher(complete: Callable[[str], list[str]]) -> Callable[[Any], dict]:
    """An IPython context matcher: on a `%decoy` line only our words are offered (Python
    names from Jedi would only be noise there)."""
    from IPython.core.completer import SimpleCompletion, context_matcher

    @context_matcher()
    def decoy_matcher(context: Any) -> dict:
        line = context.line_with_cursor[: context.cursor_position]
        if not line.lstrip().startswith(("%decoy", "%%decoy")):
            return {"completions": []}
        token = context.token
        found = complete(line)
        stem = line[: len(line) - len(token)] if token else line
        if stem.endswith(("'", '"')):  # the quote is already typed: offer the rest of the value
            found = [w[1:] if w[:1] in "'\"" else w for w in found]
        words = found
        return {"completions": [SimpleCompletion(w, type="decoy") for w in words], "suppress": True}

    return decoy_matcher
