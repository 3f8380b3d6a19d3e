"""Widgets as a page of their own: a vault of any size in the frames' shape, and an HTML file
that renders widget views with the vendored scripts only (as `make tour`'s HTML does), for
browser tests that need no kernel."""

from __future__ import annotations

import html
import json
import random
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CATS = ["travel", "sports", "food", "music", "health", "work", "user_preferences"]
TYPES = ["trip", "product", "project", "hobby", "", "person", "place", "event", "organization"]
WORDS = ["Lisbon", "golf", "sourdough", "piano", "garden", "Kyoto", "marathon", "chess", "bike", "quilt"]


class PageVault:
    """What the views read from a Vault, over hand-made frames."""

    def __init__(self, frames: dict, answer: dict | None = None):
        self.memories, self.topics, self.links = frames["memories"], frames["topics"], frames["links"]
        self.answer = answer or {}  # the served answer's waiting fields (`preparing`, …)
        self.summary = f"{len(self.memories)} memories, {len(self.topics)} topics"

    def counts(self) -> dict[str, int]:
        return {"memories": len(self.memories), "topics": len(self.topics), "unreadable": 0}


def varied_frames(n_topics: int, n_memories: int, *, seed: int = 3, long_text: int = 0) -> dict:
    """Topics of mixed types, some nested in earlier ones, with uneven memory counts (a few big
    topics, many small ones), plus memories about You; `long_text` makes one text that long."""
    from decoy_lab.vault.frames import LINK_COLUMNS, MEMORY_COLUMNS, TOPIC_COLUMNS, typed_frame

    rng = random.Random(seed)
    topics, links, memories = [], [], []
    for i in range(n_topics):
        tid = f"topic:{uuid.UUID(int=rng.getrandbits(128))}"
        name = f"{rng.choice(WORDS)} {i}" + (" and the long way round" if i % 11 == 5 else "")
        parent = topics[rng.randrange(i)] if i > 3 and rng.random() < 0.3 else None
        topics.append({"id": tid, "name": name, "type": TYPES[i % len(TYPES)], "ids": [tid], "via": ["all"]})
        frm, ends = (parent["name"], [parent["id"], tid]) if parent else ("default_user", ["user", tid])
        links.append(
            {
                "id": str(uuid.UUID(int=rng.getrandbits(128))),
                "from": frm,
                "to": name,
                "relation_type": "includes" if parent else rng.choice(["is planning", "likes", "works on"]),
                "endpoints": ends,
                "from_id": ends[0],
                "to_id": ends[1],
            }
        )
    weights = [1 / (r + 1) ** 0.9 for r in range(n_topics)]
    for j in range(n_memories):
        t = rng.choices(range(n_topics), weights)[0] if n_topics and j % 25 else None
        topic = topics[t] if t is not None else None
        memories.append(
            {
                "id": str(uuid.UUID(int=rng.getrandbits(128))),
                "text": f"Memory {j}: {rng.choice(WORDS)} notes about {topic['name'] if topic else 'you'}.",
                "topic": topic["name"] if topic else None,
                "topic_id": topic["id"] if topic else None,
                "about": [topic["id"] if topic else "user"],
                "categories": rng.sample(CATS, rng.randint(1, 2)),
                "rev": 1,
                "kid": f"{j:016x}",
                "via": ["all"],
                "mine": j % 3 == 0,
                "author_kind": "agent",
                "source": "space" if j % 97 == 0 else "memories",
            }
        )
    if long_text and memories:
        memories[1]["text"] = ("A very long memory. " * (long_text // 20 + 1))[:long_text]
    for t in topics:
        t["memory_ids"] = [m["id"] for m in memories if m["topic_id"] == t["id"]]
        t["memories"] = len(t["memory_ids"])
    return {
        "memories": typed_frame(memories, MEMORY_COLUMNS),
        "topics": typed_frame(topics, TOPIC_COLUMNS),
        "links": typed_frame(links, LINK_COLUMNS),
    }


def vendored_scripts(dest: Path = ROOT / "build" / "vendor") -> Path:
    """The widget scripts a saved page loads (scripts/vendor-widgets.sh); skips the test when npm
    cannot be reached to fetch them."""
    import os
    import subprocess
    import sys

    import pytest

    run = subprocess.run(
        ["bash", "scripts/vendor-widgets.sh", str(dest.relative_to(ROOT))],
        cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable},  # anywidget's front end comes from its wheel
        capture_output=True,
        text=True,
        timeout=180,
    )
    if run.returncode == 3:  # the script's code for "npm cannot be reached"
        pytest.skip("npm cannot be reached to vendor the widget scripts: " + run.stderr.strip())
    assert run.returncode == 0, run.stderr
    return dest


def widget_page(views: list[Any], path: Path, vendor: Path) -> Path:
    """An HTML file showing `views` from their saved state, scripts from `vendor` (copied beside it)."""
    import shutil

    from ipywidgets.embed import embed_data

    data = embed_data(views=views, drop_defaults=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    if (path.parent / "vendor").resolve() != vendor.resolve():
        shutil.copytree(vendor, path.parent / "vendor", dirs_exist_ok=True)
    specs = "".join(
        f'<div class="view"><script type="application/vnd.jupyter.widget-view+json">{json.dumps(s)}</script></div>'
        for s in data["view_specs"]
    )
    state = json.dumps(data["manager_state"]).replace("</", "<\\/")
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>" + html.escape(path.stem) + "</title>"
        "<script src='vendor/require.js'></script><script src='vendor/embed-amd.js'></script>"
        "<style>body{margin:12px;font-family:sans-serif}</style></head><body>"
        f'<script type="application/vnd.jupyter.widget-state+json">{state}</script>'
        f"{specs}</body></html>"
    )
    return path
