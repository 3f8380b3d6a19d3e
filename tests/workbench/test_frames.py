"""frames.py: decoded rows → typed DataFrames (pure functions)."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from decoy_lab.memory import Topic
from decoy_lab.vault import frames
from decoy_lab.vault.frames import DecodedRow


def rows() -> list[DecodedRow]:
    t = "11111111-1111-4111-8111-111111111111"
    return [
        DecodedRow(
            t,
            frames.TOPIC,
            name="Lisbon trip",
            type="trip",
            kid="a" * 16,
            rev=1,
            via=["all"],
            mine=False,
            author_kind="owner",
            created_at="2026-10-01T10:00:00Z",
            updated_at="2026-10-01T10:00:00Z",
        ),
        DecodedRow(
            "m2",
            frames.MEMORY,
            text="Window seat.",
            about=[f"topic:{t}"],
            entity_name="Lisbon trip",
            topic_id=f"topic:{t}",
            categories=["travel", "user_preferences"],
            kid="b" * 16,
            rev=3,
            via=["self"],
            mine=True,
            author_kind="agent",
            created_at=dt.datetime(2026, 10, 3, 9, tzinfo=dt.UTC),
            updated_at="2026-10-04T09:00:00+02:00",
        ),
        DecodedRow(
            "m1",
            frames.MEMORY,
            text="Short answers.",
            about=["user"],
            entity_name="default_user",
            kid="c" * 16,
            rev=1,
            via=["all"],
            mine=False,
            author_kind="owner",
            created_at="2026-10-02T08:00:00Z",
        ),
        DecodedRow(
            "l1",
            frames.LINK,
            relation_type="is planning",
            rel_from="default_user",
            rel_to="Lisbon trip",
            endpoints=["user", f"topic:{t}"],
            created_at="2026-10-01T10:00:01Z",
        ),
        DecodedRow("bad", frames.UNREADABLE, status="unreadable", reason="GCM tag mismatch", kid="d" * 16, rev=2),
        DecodedRow("s1", frames.SPACE_ROW, source="space", space_id="sp", text="Legacy fact.", rev=1),
    ]


def test_memories_frame_has_typed_columns_and_lists():
    df = frames.memories_frame(rows())
    assert list(df["id"]) == ["s1", "m1", "m2"]  # rows without a time first, then oldest first
    assert str(df["rev"].dtype) == "Int64" and str(df["mine"].dtype) == "boolean"
    assert str(df["created_at"].dtype).startswith("datetime64") and str(df["created_at"].dt.tz) == "UTC"
    m2 = df.set_index("id").loc["m2"]
    assert m2["categories"] == ["travel", "user_preferences"] and m2["via"] == ["self"]
    assert m2["topic"] == "Lisbon trip" and m2["updated_at"] == pd.Timestamp("2026-10-04T07:00:00Z")
    assert m2["about"] == m2["topic_id"] and df.set_index("id").loc["m1", "about"] == "user"
    assert str(df["about"].dtype) == "string"
    assert df.set_index("id").loc["s1", "source"] == "space"
    assert pd.isna(df.set_index("id").loc["m1", "topic"])


@pytest.mark.parametrize("ids", ["uuids", "any text", "one missing", "a trailing NUL"])
def test_oldest_first_is_pandas_sort_by_time_then_id(ids):
    """No time first, then oldest first, equal times by id, equal pairs as given: what pandas'
    stable sort on (created_at, id) gives, whatever the ids (numpy's sort is used where it agrees)."""
    import random
    import uuid

    rng = random.Random(len(ids))
    n = 2_000
    texts = {
        "uuids": [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(n)],
        "any text": [rng.choice(["b", "a", "ä", "B", "a b", "", "z" * 40, "日本"]) for _ in range(n)],
        "one missing": [f"m{i % 50}" for i in range(n - 1)] + [None],
        "a trailing NUL": [rng.choice(["a", "a\0", "b"]) for _ in range(n)],
    }[ids]
    times = [
        None if rng.random() < 0.05 else f"2026-10-0{rng.randint(1, 3)}T10:00:0{rng.randint(0, 2)}Z" for _ in range(n)
    ]
    df = frames._typed(
        {"created_at": times, "id": texts, "n": list(range(n))},
        {"created_at": "datetime", "id": "string", "n": "Int64"},
    )
    want = df.sort_values(["created_at", "id"], na_position="first", kind="stable").reset_index(drop=True)
    assert frames.oldest_first(df).equals(want)


@pytest.mark.parametrize("fn", [frames.memories_frame, frames.links_frame, frames.rows_frame])
def test_empty_frames_keep_their_columns_and_dtypes(fn):
    df = fn([])
    assert len(df) == 0 and "id" in df.columns
    assert str(df["created_at"].dtype).startswith("datetime64")


def test_topics_frame_counts_memories_and_marks_unread_entities():
    t = "11111111-1111-4111-8111-111111111111"
    topics = [
        Topic(f"topic:{t}", "Lisbon trip", "trip", ["m2"], [f"topic:{t}", "topic:copy"]),
        Topic("topic:unseen", "Golf", None, ["x", "y"], ["topic:unseen"]),
    ]
    df = frames.topics_frame(topics, rows())
    first, second = df.iloc[0], df.iloc[1]
    assert (first["name"], first["memories"], first["readable"], first["kid"]) == ("Lisbon trip", 1, True, "a" * 16)
    assert first["ids"] == [f"topic:{t}", "topic:copy"]
    assert (second["memories"], second["readable"]) == (2, False) and pd.isna(second["type"])
    assert str(df["memories"].dtype) == "Int64"


def test_links_and_rows_frames():
    links = frames.links_frame(rows())
    assert links.iloc[0][["from", "to", "relation_type", "from_id"]].tolist() == [
        "default_user",
        "Lisbon trip",
        "is planning",
        "user",
    ]
    allrows = frames.rows_frame(rows()).set_index("id")
    assert allrows.loc["bad", "status"] == "unreadable" and allrows.loc["bad", "reason"] == "GCM tag mismatch"
    assert allrows.loc["l1", "label"] == "default_user —is planning→ Lisbon trip"
    assert set(allrows["kind"]) == {"topic", "memory", "link", "unreadable", "space_row"}
