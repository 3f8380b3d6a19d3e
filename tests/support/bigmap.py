"""A vault's frames at the size of a long-lived agent's: 2,000 topics in the shape frames.py
serves (typed frames), nested as people nest them. Top-level projects, trips, teams and
organizations each include a few to ~60 topics of mixed types (people, documents, places, …),
some of which include topics of their own; the rest of the topics hang straight from You;
memories fall on topics unevenly (a few topics hold most). Deterministic for a seed."""

from __future__ import annotations

import random
import uuid

PARENT_TYPES = ("project", "trip", "team", "organization", "event", "goal", "hobby")
CHILD_TYPES = ("person", "document", "place", "event", "product", "media", "device", "goal", "pet", "project")
_WORDS = [
    "Atlas",
    "Beacon",
    "Cedar",
    "Delta",
    "Ember",
    "Fjord",
    "Garnet",
    "Harbor",
    "Iris",
    "Juniper",
    "Kestrel",
    "Lumen",
    "Maple",
    "Nimbus",
    "Onyx",
    "Pike",
    "Quartz",
    "Raven",
    "Sable",
    "Tundra",
    "Umber",
    "Vesper",
    "Willow",
    "Xenon",
    "Yarrow",
    "Zephyr",
    "Amber",
    "Birch",
    "Cobalt",
    "Dune",
    "Elm",
    "Flint",
    "Grove",
    "Heron",
    "Indigo",
    "Jade",
    "Kelp",
    "Larch",
    "Moss",
    "Nova",
    "Oak",
    "Pine",
    "Quill",
    "Reed",
    "Sage",
    "Thistle",
    "Ursa",
    "Vale",
    "Wren",
    "Yew",
]
_PLACES = [
    "Lisbon",
    "Porto",
    "Kyoto",
    "Oslo",
    "Lima",
    "Quito",
    "Dakar",
    "Hanoi",
    "Riga",
    "Tallinn",
    "Bergen",
    "Cusco",
    "Split",
    "Nice",
    "Bruges",
    "Ghent",
    "Cork",
    "Turin",
    "Siena",
    "Lyon",
    "Bonn",
    "Graz",
    "Brno",
    "Malmo",
    "Aarhus",
    "Faro",
    "Braga",
    "Bilbao",
    "Cadiz",
    "Sevilla",
]
_FIRST = [
    "Ana",
    "Ben",
    "Chloe",
    "Dev",
    "Emil",
    "Farah",
    "Gus",
    "Hana",
    "Ivo",
    "Jun",
    "Kai",
    "Lena",
    "Mika",
    "Nora",
    "Omar",
    "Pia",
    "Rui",
    "Sara",
    "Tom",
    "Uma",
    "Vik",
    "Yara",
]
_LAST = [
    "Silva",
    "Okafor",
    "Tanaka",
    "Novak",
    "Haddad",
    "Berg",
    "Costa",
    "Moreau",
    "Ivanova",
    "Lindqvist",
    "Quispe",
    "Sato",
    "Rossi",
    "Dubois",
]
_THINGS = {
    "document": ("notes", "budget", "contract", "plan", "report", "draft"),
    "product": ("kit", "app", "bike", "camera", "desk"),
    "media": ("podcast", "album", "film", "book", "series"),
    "device": ("phone", "laptop", "router", "watch"),
    "goal": ("savings", "fitness", "launch", "move"),
    "pet": ("cat", "dog", "parrot"),
    "project": ("rebuild", "migration", "garden", "website"),
    "event": ("meetup", "wedding", "review", "kickoff", "dinner"),
}
_PARENT_NOUN = {
    "project": "project",
    "trip": "trip",
    "team": "team",
    "organization": "Ltd",
    "event": "festival",
    "goal": "goal",
    "hobby": "club",
}


class _Namer:
    """Unique, readable topic names (a number only where a name would repeat)."""

    def __init__(self, rng: random.Random):
        self.rng, self.seen = rng, set()

    def __call__(self, ttype: str, around: str = "") -> str:
        r = self.rng
        if ttype == "person":
            base = f"{r.choice(_FIRST)} {r.choice(_LAST)}"
        elif ttype == "place":
            base = f"{r.choice(_PLACES)} {r.choice(('flat', 'office', 'café', 'station', 'old town', 'harbour'))}"
        elif ttype in _PARENT_NOUN and not around:
            base = f"{r.choice(_WORDS)} {r.choice(_PLACES) if ttype == 'trip' else ''} {_PARENT_NOUN[ttype]}"
        else:
            base = f"{around or r.choice(_WORDS)} {r.choice(_THINGS.get(ttype, ('notes',)))}"
        name, n = " ".join(base.split()), 2
        while name.lower() in self.seen:
            name, n = f"{' '.join(base.split())} {n}", n + 1
        self.seen.add(name.lower())
        return name


def big_frames(topics: int = 2000, memories: int = 100_000, *, seed: int = 11) -> dict:
    """`topics` topics and `memories` memories as frames (memories, topics, links)."""
    from decoy_lab.vault.frames import LINK_COLUMNS, MEMORY_COLUMNS, TOPIC_COLUMNS, typed_frame

    rng = random.Random(seed)
    name = _Namer(rng)
    base = uuid.UUID(int=seed << 64)
    rows: list[dict] = []  # topics in creation order: (id, name, type, parent id or "user")

    def add(ttype: str, parent: str, around: str = "") -> dict:
        t = {"id": f"topic:{uuid.UUID(int=base.int + len(rows) + 1)}", "type": ttype, "parent": parent}
        t["name"] = name(ttype, around)
        rows.append(t)
        return t

    flat = topics // 5  # a fifth hang straight from You
    while len(rows) < topics - flat:
        top = add(rng.choice(PARENT_TYPES), "user")
        word = top["name"].split()[0]
        for _ in range(min(int(rng.paretovariate(1.2) * 6), 60, topics - flat - len(rows))):
            kid = add(rng.choice(CHILD_TYPES), top["id"], word)
            if rng.random() < 0.12:  # a few include topics of their own
                for _ in range(min(rng.randint(2, 9), topics - flat - len(rows))):
                    add(rng.choice(CHILD_TYPES), kid["id"], kid["name"].split()[0])
    while len(rows) < topics:
        add(rng.choice(("person", "place", "hobby", "media", "device", "pet", "goal")), "user")
    by_id = {t["id"]: t for t in rows}
    weights = [rng.paretovariate(1.1) for _ in rows]
    owners = rng.choices(range(len(rows)), weights=weights, k=memories)
    cats = ("travel", "work", "food", "sports", "music", "health", "family")
    mem = []
    for i, k in enumerate(owners):
        t = rows[k]
        mem.append(
            {
                "id": str(uuid.UUID(int=base.int + 10**7 + i)),
                "text": f"{t['name']}: note {i}",
                "topic": t["name"],
                "topic_id": t["id"],
                "about": [t["id"]],
                "categories": [cats[(i + k) % len(cats)]],
                "rev": 1,
                "via": "self",
                "mine": i % 3 == 0,
                "author_kind": "agent",
            }
        )
    ids_of: dict[str, list[str]] = {t["id"]: [] for t in rows}
    for m in mem:
        ids_of[m["topic_id"]].append(m["id"])
    topic_recs = [
        {**t, "memories": len(ids_of[t["id"]]), "memory_ids": ids_of[t["id"]], "ids": [t["id"]], "readable": True}
        for t in rows
    ]
    links = []
    for t in rows:
        src = by_id.get(t["parent"])
        ends = [t["parent"], t["id"]]
        rel = "includes" if src else rng.choice(("is planning", "knows", "works on", "likes"))
        links.append(
            {
                "id": str(uuid.UUID(int=base.int + 10**9 + len(links))),
                "from": src["name"] if src else "default_user",
                "to": t["name"],
                "relation_type": rel,
                "from_id": ends[0],
                "to_id": ends[1],
                "endpoints": ends,
            }
        )
    return {
        "memories": typed_frame(mem, MEMORY_COLUMNS),
        "topics": typed_frame(topic_recs, TOPIC_COLUMNS),
        "links": typed_frame(links, LINK_COLUMNS),
    }
