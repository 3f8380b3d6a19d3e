"""Save: a new memory (and its topic's rows, when the topic is new) sealed once, journaled, and
sent under the retry rules; the same save cut short before finishes with the same rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from decoy_lab import memory
from decoy_lab.protocol import verify
from decoy_lab.protocol.writes.resend import resend_entry, run_entry
from decoy_lab.protocol.writes.sending import MEMORIES, checked_text, log
from decoy_lab.protocol.writes.topics import find_or_refuse_new, new_topic, remember_topic, topic_name
from decoy_lab.store.journal import new_entry

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session


def save(
    s: Session,
    text: str,
    *,
    topic: Any = None,
    topic_type: str = "",
    link: Any = None,
    categories: Iterable[str] = (),
    account: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> str:
    checked_text(text, "text")
    checked_text(topic if isinstance(topic, (str, bytes)) else None, "topic name")
    categories = list(categories)
    asked = [text, topic, topic_type, link, sorted(map(str, categories)), account, metadata]
    intent = s.intent("save", asked)
    earlier = s.journal.find(intent)
    if earlier is not None:  # the same save, cut short before: finish it with the same rows
        log.info("this save is pending from an earlier run: sending its rows again")
        if resend_entry(s, earlier)["outcome"] == "committed":
            return str(earlier["target"])
    keys = s.keys()
    rows: list[dict[str, Any]] = []
    made = None
    ref = None
    if topic is not None:
        found = find_or_refuse_new(s, topic)
        if found is not None:
            ref = {"id": found.id, "name": found.name}
        else:
            made = new_topic(s, keys, topic_name(topic), topic_type, link)
            rows.extend(made.rows)
            ref = made.topic
    row = memory.new_memory_row(keys, text, topic=ref, categories=categories, account=account, metadata=metadata)
    rows.append(row)
    topic_ids = [r["id"] for r in made.rows] if made is not None else []
    entry = new_entry(
        "save",
        [("POST", MEMORIES, {"rows": rows})],
        ids=[r["id"] for r in rows],
        topic_ids=topic_ids,
        intent=intent,
        target=row["id"],
    )
    run_entry(s, entry)
    if made is not None:
        remember_topic(s, made, topic_type, [row["id"]])
    log.info("saved memory %s", row["id"])
    verify.check(s, row["id"], {"text": text, "categories": list(categories), "topic": ref, "account": account})
    return str(row["id"])
