"""Which reasons a connection that edits someone else's memory may share it into, over HTTP
(`POST /api/agent/context/memory-wraps`).

Spec 001, memory-wraps: each wrap "is kept only for a reason its recipient holds now and the
caller holds write on (or one the memory already has, or `all`)".
"""

from __future__ import annotations

from support.memories_kit import WRAPS, key_of, wraps_body
from support.sandbox_kit import saved


def grant(permission: str, category: str) -> dict:
    return {"permissions": [permission], "datatypes": [category]}


def test_a_reason_the_caller_writes_is_kept_one_it_does_not_is_dropped(lab, alpha):
    editor = lab.pair("editor", grant("memory.edit", "travel"))
    saver = lab.pair("saver", "memory.save", grant("memory.edit", "travel"))  # saving is not writing music
    row = saved(alpha, categories=["travel", "music"])  # no wrap records music: no grantee read it then
    music = lab.pair("music", grant("memory.read", "music"))
    lab.ask(editor, grant("memory.edit", "music"))
    key = key_of(editor, row["id"])
    r = saver.post(WRAPS, wraps_body(row["id"], row["kid"], key, (music, ["category:music"])))
    assert r.json() == {"added": 0}
    r = editor.post(WRAPS, wraps_body(row["id"], row["kid"], key, (music, ["category:music"])))
    assert r.json() == {"added": 1}
    assert music.served(row["id"])["via"] == ["category:music"]


def test_a_reason_the_memory_already_has_may_be_shared_by_any_editor(lab, alpha):
    editor = lab.pair("editor", grant("memory.edit", "travel"))
    lab.pair("foodie", grant("memory.read", "food"))  # paired before the save: its wrap records food
    row = saved(alpha, categories=["travel", "food"])
    late = lab.pair("late", grant("memory.read", "food"), key_name="late")
    key = key_of(editor, row["id"])
    r = editor.post(WRAPS, wraps_body(row["id"], row["kid"], key, (late, ["category:food"])))
    assert r.json() == {"added": 1}
    assert late.served(row["id"])["via"] == ["category:food"]


def test_all_may_be_shared_by_any_editor_and_each_reason_is_judged_alone(lab, alpha):
    """ "(or one the memory already has, or `all`)": `all` needs no write on it; in one wrap a
    reason the caller may not share is dropped and the next one still kept."""
    editor = lab.pair("editor", grant("memory.edit", "travel"))
    row = saved(alpha, categories=["travel", "music"])
    everyone = lab.pair("everyone", "memory.read")
    key = key_of(editor, row["id"])
    r = editor.post(WRAPS, wraps_body(row["id"], row["kid"], key, (everyone, ["category:music", "all"])))
    assert r.json() == {"added": 1}
    assert everyone.served(row["id"])["via"] == ["all"]
