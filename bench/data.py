"""The one set of rows every benchmark works on: topics and memories sealed with decoy_lab.memory.

Rows are built with `new_topic_rows` / `new_memory_row` (so they are exactly what a client
writes), grouped into POST batches of at most 200 rows that keep each new topic's entity and
relation rows in the same request as its first memory, as the spec asks.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

from decoy_lab.memory import CATEGORIES, ENTITY_TYPES, RecipientKeys, new_memory_row, new_topic_rows
from decoy_lab.wire.crypto import AgentKey

MAX_BATCH = 200  # POST /memories: rows maxItems 200


@dataclass(frozen=True)
class Sizes:
    """How big each benchmark runs."""

    memories: int
    topics: int
    writer_seconds: float
    writers: int = 8
    repeats: int = 3
    large: int = 100_000  # memories in the large-vault run (bench/large.py)

    @property
    def label(self) -> str:
        return f"{self.memories:,} memories / {self.topics} topics"


FULL = Sizes(memories=10_000, topics=500, writer_seconds=30.0)
QUICK = Sizes(memories=1_000, topics=50, writer_seconds=5.0, large=3_000)

_WORDS = (
    "flight",
    "budget",
    "receipt",
    "meeting",
    "recipe",
    "training",
    "deadline",
    "colour",
    "size",
    "warranty",
    "schedule",
    "allergy",
    "preference",
    "playlist",
    "route",
    "booking",
    "draft",
    "review",
)


@dataclass
class Dataset:
    """POST-ready rows in batches, the ids of each kind, and the keys they were sealed for."""

    agent_key: AgentKey
    keys: RecipientKeys
    batches: list[list[dict]]
    memory_ids: list[str] = field(default_factory=list)
    topic_ids: list[str] = field(default_factory=list)  # "topic:<entity row id>"

    @property
    def rows(self) -> list[dict]:
        return [r for b in self.batches for r in b]

    def __len__(self) -> int:
        return sum(len(b) for b in self.batches)


def _text(rng: random.Random, topic: str, i: int) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 40)))
    return f"{topic}: note {i}. {words}."


def generate(agent_key: AgentKey, keys: RecipientKeys, sizes: Sizes, *, workers: int = 2, seed: int = 6) -> Dataset:
    """`sizes.topics` topics and `sizes.memories` memories spread over them, sealed for `keys`.

    Sealing costs two RSA public-key operations per row (~0.1 ms each); threads share it out.
    """
    rng = random.Random(seed)
    names = [f"Project {i:04d} {rng.choice(_WORDS)}" for i in range(sizes.topics)]
    types = [rng.choice(("", *ENTITY_TYPES)) for _ in names]
    plan = [
        (
            i % max(sizes.topics, 1),
            _text(rng, names[i % max(sizes.topics, 1)], i),
            rng.sample(CATEGORIES, rng.randint(0, 3)),
        )
        for i in range(sizes.memories)
    ]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        topics = list(pool.map(lambda nt: new_topic_rows(keys, nt[0], type=nt[1]), zip(names, types)))
        memories = list(
            pool.map(
                lambda p: new_memory_row(keys, p[1], topic=topics[p[0]].topic if topics else None, categories=p[2]),
                plan,
            )
        )

    # Each topic travels with its first memory; the rest fill batches of at most MAX_BATCH rows.
    first: dict[int, int] = {}
    for idx, (t, _, _) in enumerate(plan):
        first.setdefault(t, idx)
    groups: list[list[dict]] = []
    for t, tr in enumerate(topics):
        groups.append([*tr.rows, memories[first[t]]] if t in first else list(tr.rows))
    firsts = set(first.values())
    groups += [[m] for i, m in enumerate(memories) if i not in firsts]
    batches: list[list[dict]] = [[]]
    for g in groups:
        if len(batches[-1]) + len(g) > MAX_BATCH:
            batches.append([])
        batches[-1].extend(g)
    return Dataset(
        agent_key, keys, [b for b in batches if b], [m["id"] for m in memories], [tr.topic_id for tr in topics]
    )


def as_served(rows: list[dict]) -> list[dict]:
    """POST-ready rows in the shape GET /memories serves them to their author (for runs without
    a sandbox): `wrapped_key` is the self wrap."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return [
        {
            "id": r["id"],
            "kid": r["kid"],
            "rev": 1,
            "ciphertext": r["ciphertext"],
            "wrapped_key": r["self_wrap"],
            "via": list(r.get("self_via") or ["self"]),
            "mine": True,
            "author_kind": "agent",
            "created_at": now,
            "updated_at": now,
        }
        for r in rows
    ]
