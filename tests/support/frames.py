"""Hand-made Vault frames for the view tests."""

from __future__ import annotations

import uuid


def make_frames(n_topics: int = 4, *, nested: int = 1, memories_per_topic: int = 2, seed: int = 7) -> dict:
    """Hand-made Vault frames in the shape frames.py serves: topics hang from You, the last
    `nested` topics hang from the first one; each topic holds memories; one memory about You."""
    from decoy_lab.vault.frames import LINK_COLUMNS, MEMORY_COLUMNS, TOPIC_COLUMNS, typed_frame

    rnd = uuid.UUID(int=seed)
    topics, links, memories = [], [], []
    types = ["trip", "product", "project", "hobby", "", "person"]
    cats = ["travel", "sports", "food", "music"]
    for i in range(n_topics):
        tid = f"topic:{uuid.UUID(int=rnd.int + i + 1)}"
        name = f"Topic {i} " + "with a rather long name " * (i % 3 == 2)
        topics.append(
            {
                "id": tid,
                "name": name.strip(),
                "type": types[i % len(types)],
                "memories": memories_per_topic,
                "ids": [tid],
            }
        )
        parent = topics[0] if 0 < n_topics - nested <= i and i > 0 else None
        if parent is None:
            ends, frm, rel = ["user", tid], "default_user", "is planning"
        else:
            ends, frm, rel = [parent["id"], tid], parent["name"], "includes"
        links.append(
            {"id": str(uuid.uuid4()), "from": frm, "to": name.strip(), "relation_type": rel, "endpoints": ends}
        )
        for j in range(memories_per_topic):
            memories.append(
                {
                    "id": str(uuid.uuid4()),
                    "text": f"memory {j} of topic {i}",
                    "topic": name.strip(),
                    "topic_id": tid,
                    "about": [tid],
                    "categories": [cats[(i + j) % len(cats)]],
                    "rev": 1,
                    "kid": "00" * 8,
                    "via": "self",
                    "mine": j % 2 == 0,
                    "author_kind": "agent",
                }
            )
    memories.append(
        {
            "id": str(uuid.uuid4()),
            "text": "Prefers short answers.",
            "topic": None,
            "topic_id": None,
            "about": ["user"],
            "categories": ["user_preferences"],
            "rev": 1,
            "kid": "11" * 8,
            "via": "self",
            "mine": True,
            "author_kind": "agent",
        }
    )
    for t in topics:
        t["memory_ids"] = [m["id"] for m in memories if m["topic_id"] == t["id"]]
    for link in links:
        link["from_id"], link["to_id"] = link["endpoints"]
    return {
        "memories": typed_frame(memories, MEMORY_COLUMNS),
        "topics": typed_frame(topics, TOPIC_COLUMNS),
        "links": typed_frame(links, LINK_COLUMNS),
    }
