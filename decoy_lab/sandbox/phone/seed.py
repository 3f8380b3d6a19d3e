"""Seed vaults: "demo" (a synthetic vault with something real to show) and "none" (empty).

The demo vault is written by the owner and by a second simulated agent connection ("Trip
planner (demo)", which holds only `memory.save`): 60 memories over a dozen topics — a trip
with sub-topics, a project, hobbies, a purchase, a goal, an event, a pet … — every mem0
category used, a few memories about two accounts (named in the owner's account list), and a
legacy Me space with graph rows. Every row
is built by decoy_lab.memory, so it is byte-for-byte what the Decoy app and agents write; no agent
that pairs later holds a key yet, so its first read shows `preparing` until the owner's phone
shares (which it does on its own a few seconds later, see schedule.py).

Texts, labels, authorship, order, ids and timestamps (relative to the sandbox clock) repeat for a
given `rng_seed`; memory keys (so kids and ciphertexts) are fresh random values, as the app
makes them. All content is synthetic.
"""

from __future__ import annotations

import json
import random
import sqlite3
import uuid
from dataclasses import dataclass, field
from typing import Any

from decoy_lab import memory
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.core import SandboxState
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.stores import spacestore as ss
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key

SEEDS = ("demo", "none")
DEMO_AGENT = "Trip planner (demo)"
DEMO_CLIENT = "demo-trip-planner"
DAY = 86400.0

# Topics: key → (name, type, parent key or None, relation)
TOPICS: list[tuple[str, str, str, str | None, str]] = [
    ("lisbon", "Lisbon trip", "trip", None, "is planning"),
    ("flights", "Lisbon flights", "event", "lisbon", "includes"),
    ("hotel", "Lisbon hotel", "place", "lisbon", "includes"),
    ("sintra", "Day trip to Sintra", "event", "lisbon", "includes"),
    ("workbench", "Decoy workbench", "project", None, "works on"),
    ("sourdough", "Sourdough baking", "hobby", None, "is learning"),
    ("bike", "Road bike purchase", "product", None, "is choosing"),
    ("marathon", "Spring half marathon", "goal", None, "is training for"),
    ("birthday", "Grandma's 90th birthday", "event", None, "is organising"),
    ("piano", "Jazz piano", "hobby", None, "is learning"),
    ("kitchen", "Kitchen renovation", "project", None, "is planning"),
    ("pepper", "Pepper", "pet", None, "takes care of"),
]

#: the names of the demo's accounts (`account:<n>` below), as the owner's account list holds them
ACCOUNT_NAMES = ("GitHub", "TAP Air Portugal")
# Memories: (topic key | None | "account:<n>", categories, text, author "owner"|"agent")
MEMORIES: list[tuple[str | None, tuple[str, ...], str, str]] = [
    ("lisbon", ("travel",), "Lisbon trip: 9–14 October, two adults, no car.", "agent"),
    (
        "lisbon",
        ("travel", "user_preferences"),
        "Prefers walkable neighbourhoods over big hotels on the outskirts.",
        "agent",
    ),
    ("lisbon", ("travel", "food"), "Wants one dinner with fado music in Alfama; booked nothing yet.", "agent"),
    ("lisbon", ("travel", "misc"), "Packing list started: adapter, rain jacket, comfortable shoes.", "owner"),
    ("flights", ("travel",), "Direct morning flights run on Tuesdays and Fridays only (checked 2026-10-05).", "agent"),
    ("flights", ("travel", "user_preferences"), "Prefers an aisle seat and hand luggage only.", "agent"),
    (
        "flights",
        ("travel",),
        "Dead end: the Thursday evening option needs two connections; do not propose it again.",
        "agent",
    ),
    ("flights", ("travel", "milestones"), "Chose the Friday 08:10 direct flight; not booked yet.", "agent"),
    ("hotel", ("travel",), "Shortlist: a guesthouse in Príncipe Real and a small hotel near Cais do Sodré.", "agent"),
    ("hotel", ("travel", "user_preferences"), "Needs a quiet room; street noise ruined the last trip.", "owner"),
    ("hotel", ("travel", "food"), "Breakfast included matters more than a gym.", "agent"),
    ("sintra", ("travel", "entertainment"), "Pena Palace tickets sell out: book the 10:00 slot online.", "agent"),
    ("sintra", ("travel",), "Take the train from Rossio; about 40 minutes.", "agent"),
    (
        "workbench",
        ("professional_details", "technology"),
        "Works on a Jupyter workbench for an encrypted memory API.",
        "owner",
    ),
    (
        "workbench",
        ("technology",),
        "Decision: the sandbox enforces every rule the spec states; a lenient fake hides bugs.",
        "agent",
    ),
    (
        "workbench",
        ("technology", "milestones"),
        "Milestone: rows sealed in Python open in the Node implementation.",
        "agent",
    ),
    ("workbench", ("professional_details",), "Demo for the team is planned for the last Friday of the month.", "owner"),
    (
        "workbench",
        ("technology", "user_preferences"),
        "Prefers pandas DataFrames over printed dicts in notebooks.",
        "agent",
    ),
    ("sourdough", ("hobbies", "food"), "Starter is named Bubbles; fed daily at 8 am with 50 g rye.", "owner"),
    ("sourdough", ("hobbies", "food"), "75% hydration loaves spread too much; try 70% next bake.", "agent"),
    ("sourdough", ("food",), "Best result so far: overnight cold proof, 250 °C with a Dutch oven.", "owner"),
    ("sourdough", ("hobbies",), "Wants to try a rye and caraway loaf next.", "agent"),
    ("bike", ("sports", "technology"), "Comparing an aluminium endurance frame and a carbon gravel bike.", "agent"),
    (
        "bike",
        ("sports", "user_preferences"),
        "Budget up to 2,000 euros; wants disc brakes and room for 35 mm tyres.",
        "owner",
    ),
    ("bike", ("sports",), "Test ride on Saturday: the endurance frame felt more comfortable on cobbles.", "agent"),
    ("bike", ("sports", "fashion"), "Would like a bike in dark green or grey, no neon.", "agent"),
    ("bike", ("sports", "milestones"), "Decision: the endurance bike; ordering after payday.", "owner"),
    ("marathon", ("sports", "health"), "Goal: finish the spring half marathon under 1:55.", "owner"),
    ("marathon", ("sports",), "Plan: three runs a week, long run on Sundays building to 18 km.", "agent"),
    (
        "marathon",
        ("sports", "health"),
        "Knee felt sore after 14 km; physio suggested strength work twice a week.",
        "owner",
    ),
    ("marathon", ("sports", "fashion"), "Needs new running shoes with more cushioning before race day.", "agent"),
    ("marathon", ("sports", "music"), "Running playlist: upbeat funk, about 170 beats per minute.", "agent"),
    ("birthday", ("family", "milestones"), "Grandma turns 90 on 3 December; party on the Saturday after.", "owner"),
    (
        "birthday",
        ("family", "food"),
        "She loves custard tarts; order two dozen from the bakery on the corner.",
        "owner",
    ),
    ("birthday", ("family",), "Cousins from Porto are coming; they need a place to stay for two nights.", "agent"),
    (
        "birthday",
        ("family", "entertainment"),
        "Photo slideshow of her decades: collect scans from everyone by November.",
        "agent",
    ),
    ("piano", ("music", "hobbies"), "Learning 'Autumn Leaves' with rootless left-hand voicings.", "owner"),
    ("piano", ("music",), "Teacher suggests practising ii–V–I in all twelve keys, ten minutes a day.", "agent"),
    ("piano", ("music", "entertainment"), "Favourite pianists: Bill Evans and Hiromi.", "owner"),
    ("piano", ("music", "milestones"), "Played in public for the first time at the open mic in September.", "owner"),
    ("kitchen", ("personal_details", "misc"), "Kitchen renovation: replace worktops and add an island.", "owner"),
    (
        "kitchen",
        ("user_preferences",),
        "Prefers oak worktops over stone; wants open shelves, no wall cabinets.",
        "agent",
    ),
    ("kitchen", ("misc",), "Quote from the carpenter expected next week.", "agent"),
    ("kitchen", ("technology",), "Wants an induction hob and a quiet extractor.", "agent"),
    ("pepper", ("family", "health"), "Pepper is a 4-year-old border collie; vaccinations due in March.", "owner"),
    ("pepper", ("family",), "Needs a dog sitter for the Lisbon trip dates.", "agent"),
    ("pepper", ("health", "food"), "Pepper is allergic to chicken; grain-free salmon food only.", "owner"),
    (None, ("user_preferences",), "Prefers short answers with the decision first.", "owner"),
    (None, ("personal_details",), "Lives in Utrecht; works from home on Mondays and Fridays.", "owner"),
    (None, ("personal_details", "user_preferences"), "Writes in English; reads Dutch and Portuguese.", "owner"),
    (None, ("health",), "Vegetarian on weekdays; no shellfish.", "owner"),
    (None, ("food", "user_preferences"), "Coffee: flat white, oat milk.", "agent"),
    (None, ("professional_details",), "Software engineer; focus on privacy tooling.", "owner"),
    (None, ("entertainment",), "Watching a slow Scandinavian crime series; no spoilers.", "agent"),
    (None, ("fashion",), "Wears mostly navy and grey; dislikes large logos.", "owner"),
    (None, ("milestones", "family"), "Tenth wedding anniversary next June.", "owner"),
    (None, ("misc",), "Keeps receipts in a shared folder named 'Receipts 2026'.", "agent"),
    ("account:0", ("technology",), "Uses squash merges and signed commits.", "agent"),
    ("account:0", ("professional_details",), "Two-factor is on; recovery codes are with the owner, not here.", "owner"),
    ("account:1", ("travel",), "Frequent-flyer tier renews in January; prefers seat 3C-style aisle seats.", "agent"),
]

# Legacy Me space: graph rows as the old MCP bridge wrote them.
SPACE_ROWS: list[dict] = [
    {"entity": {"name": "Home office", "entityType": "place"}},
    {
        "observation": {
            "entityName": "Home office",
            "content": "Standing desk by the window; second monitor on the left.",
        },
        "categories": ["professional_details"],
    },
    {
        "observation": {"entityName": "default_user", "content": "Prefers meetings after 10 am."},
        "categories": ["user_preferences"],
    },
    {"relation": {"from": "default_user", "to": "Home office", "relationType": "works from"}},
]


@dataclass
class SeedReport:
    """What a seed wrote (ids by topic name, the demo agent's token id)."""

    name: str
    memories: int = 0
    topics: dict[str, str] = field(default_factory=dict)
    rows: int = 0
    space_rows: int = 0
    demo_token_id: str | None = None
    accounts: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"<SeedReport {self.name}: {self.memories} memories, {len(self.topics)} topics, "
            f"{self.rows} rows, {self.space_rows} legacy space rows>"
        )


def apply(state: SandboxState, name: str | None = None, *, rng_seed: int = 2026) -> SeedReport:
    """Write seed `name` (default: `state.seed`) into the state's store."""
    name = name or getattr(state, "seed", "none") or "none"
    if name not in SEEDS:
        raise ValueError(f"seed must be one of {SEEDS}, not {name!r}")
    if name == "none":
        return SeedReport(name)
    return _demo(state, random.Random(rng_seed))


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _demo_agent(con: sqlite3.Connection, rng: random.Random, now: float, key: AgentKey) -> str:
    """The simulated second agent: a connection holding memory.save (rows in the connection tables that oauth.py owns)."""
    token_id = _uuid(rng)
    con.execute(
        "INSERT INTO connections (token_id, connection_id, name, client_id, public_key, created_at,"
        " key_changed_at, revoked, access_version) VALUES (?,?,?,?,?,?,NULL,0,1)",
        (token_id, token_id, DEMO_AGENT, DEMO_CLIENT, key.public_key_b64, now - 40 * DAY),
    )
    con.execute(
        "INSERT INTO policies (id, token_id, request_id, reason, created_at, approved_at, expires_at,"
        " revoked_at, rows) VALUES (?,?,NULL,?,?,?,NULL,NULL,?)",
        (
            _uuid(rng),
            token_id,
            "seeded demo connection",
            now - 40 * DAY,
            now - 40 * DAY,
            json.dumps([{"permissions": ["memory.save"]}]),
        ),
    )
    return token_id


def _demo(state: SandboxState, rng: random.Random) -> SeedReport:
    now = float(state.clock())
    owner_pk = state.owner.key.public_key_b64
    agent_key = AgentKey.generate()
    report = SeedReport("demo", accounts=[_uuid(rng) for _ in range(2)])
    owner_keys = memory.RecipientKeys(owner_pk, owner_pk)  # the owner's app: its own wrap is the owner wrap
    agent_keys = memory.RecipientKeys(owner_pk, agent_key.public_key_b64)
    with state.store.tx() as con:  # ids come from `rng`, so the demo vault's ids repeat; keys stay random
        token_id = _demo_agent(con, rng, now, agent_key)
        report.demo_token_id = token_id
        t = now - 30 * DAY

        def put(row: dict, author: str) -> None:
            nonlocal t
            t += rng.uniform(0.2, 0.45) * DAY
            is_agent = author == "agent"
            stored = ms.MemoryRow(
                row["id"],
                row["kid"],
                1,
                row["ciphertext"],
                row["owner_wrap"],
                "agent" if is_agent else "owner",
                token_id if is_agent else None,
                token_id if is_agent else None,
                t,
                t,
                t,
            )
            ms.insert_memory(con, stored)
            if is_agent:
                ms.put_wrap(
                    con,
                    ms.Wrap(
                        row["id"],
                        token_id,
                        ms.key_fp(agent_key.public_key_b64),
                        row["kid"],
                        row["self_wrap"],
                        ["self"],
                        t,
                    ),
                )
            ms.log_change(con, "context_memory", row["id"], "created", t)
            report.rows += 1

        topics: dict[str, dict] = {}
        authors = {
            k: ("agent" if k in ("lisbon", "flights", "hotel", "sintra", "bike", "workbench") else "owner")
            for k, *_ in TOPICS
        }
        for key, tname, ttype, parent, relation in TOPICS:
            keys = agent_keys if authors[key] == "agent" else owner_keys
            made = memory.new_topic_rows(
                keys,
                tname,
                type=ttype,
                relation_type=relation,
                parent=topics[parent] if parent else None,
                ids=(_uuid(rng), _uuid(rng)),
            )
            topics[key] = made.topic
            report.topics[tname] = made.topic_id
            for row in made.rows:
                put(row, authors[key])
        for where, cats, text, author in MEMORIES:
            keys = agent_keys if author == "agent" else owner_keys
            kw: dict[str, Any] = {"categories": list(cats)}
            if where and where.startswith("account:"):
                kw["account"] = report.accounts[int(where.split(":")[1])]
            elif where:
                kw["topic"] = topics[where]
            put(memory.new_memory_row(keys, text, row_id=_uuid(rng), **kw), author)
            report.memories += 1
        report.space_rows = _legacy_space(con, owner_pk, agent_key, token_id, rng, now)
    for name, account_id in zip(ACCOUNT_NAMES, report.accounts):  # the owner's authorized-account list
        state.owner.add_account(name, account_id)
    state.seed_report = report
    return report


def _legacy_space(
    con: sqlite3.Connection, owner_pk: str, agent_key: AgentKey, token_id: str, rng: random.Random, now: float
) -> int:
    space_key = random_key()
    space_id = _uuid(rng)
    created = now - 60 * DAY
    ss.insert_space(
        con,
        ss.Space(
            space_id,
            "me",
            None,
            wire.kid(space_key),
            wire.b64encode(sealing.wrap_to_owner(space_key, owner_pk)),
            token_id,
            created,
        ),
    )
    ss.put_space_wrap(
        con,
        space_id,
        token_id,
        ms.key_fp(agent_key.public_key_b64),
        wire.b64encode(sealing.wrap_to_agent(space_key, agent_key.public_key_b64)),
    )
    ms.log_change(con, "context_space", space_id, "created", created)
    for i, plain in enumerate(SPACE_ROWS):
        row_id = _uuid(rng)
        blob = sealing.seal_space_row(space_key, plain, space_id=space_id, row_id=row_id)
        at = created + i * 3600
        ss.insert_space_row(
            con,
            ss.SpaceRow(row_id, space_id, wire.kid(space_key), wire.b64encode(blob), 1, "agent", token_id, 0, at, at),
        )
        ms.log_change(con, "context_row", row_id, "created", at, space_id=space_id)
    return len(SPACE_ROWS)
