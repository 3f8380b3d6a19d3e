"""The write rules over a fake session: no server, no HTTP — what `writes` sends, what it journals,
and when it calls an answer proof (the narrow Session is what makes this possible)."""

from __future__ import annotations

from typing import Any

import pytest

from decoy_lab import memory
from decoy_lab.errors import NotFound, OutcomeUnknown, TransportError
from decoy_lab.protocol import legacy, writes
from decoy_lab.store.journal import Journal

from support.answers import AGENT, KEYS


class FakeSession:
    """Just what the save rule uses: keys, send (scripted answers), a journal and counters."""

    def __init__(self, answers: list[Any]):
        self.answers, self.sent = list(answers), []
        self.journal, self.agent_key = Journal(), AGENT
        self.resends = self.reached = 0
        self.retries, self.written, self.made_topics, self.vault = 0, set(), [], None
        self.key_cache, self.last_verify, self.api = memory.KeyCache(), None, None

    def served_row(self, row_id: str) -> dict:  # the read-back finds nothing: logged, never raised
        raise NotFound(404, "NOT_FOUND", "not served")

    def keys(self) -> memory.RecipientKeys:
        return KEYS

    def intent(self, kind: str, what: Any) -> str:
        return f"{kind}:{what!r}"

    def send(self, method, path, body, members=None, check=None) -> dict:
        self.sent.append((method, path, body))
        self.reached += 1
        answer = self.answers.pop(0) if self.answers else {"created": [r["id"] for r in body["rows"]]}
        if isinstance(answer, Exception):
            raise answer
        why = check(answer) if check else None
        if why:
            raise TransportError(why)
        return answer


def test_a_save_sends_its_rows_once_and_settles_its_journal_entry():
    fake = FakeSession([])  # answers for every row sent
    mid = writes.save(fake, "Prefers tea.")  # type: ignore[arg-type]
    assert [m for m, _, _ in fake.sent] == ["POST"] and fake.sent[0][2]["rows"][0]["id"] == mid
    assert fake.journal.entries() == []


def test_an_unknown_outcome_keeps_the_rows_in_the_journal_and_the_same_save_resends_them():
    fake = FakeSession([TransportError("lost")])
    with pytest.raises(OutcomeUnknown) as caught:
        writes.save(fake, "Prefers tea.")  # type: ignore[arg-type]
    (entry,) = fake.journal.entries()
    assert entry["ids"] == caught.value.ids and entry["sends"][0]["body"] == fake.sent[0][2]
    fake.answers = [{"created": [], "existing": caught.value.ids}]
    assert writes.save(fake, "Prefers tea.") == caught.value.ids[-1]  # type: ignore[arg-type]
    assert fake.sent[0][2] == fake.sent[1][2], "the SAME rows"
    assert fake.journal.entries() == []


def test_answers_are_checked_against_what_was_asked():
    ids = ["a", "b"]
    assert writes.accounts_for(ids)({"created": ["a"], "existing": ["b"]}) is None
    assert "1 of the 2" in writes.accounts_for(ids)({"created": ["a"]})
    body = {"id": "m", "expected_rev": 3}
    assert legacy.edited(body)({"id": "m", "rev": 4}) is None
    assert legacy.edited(body)({"id": "m", "rev": 3}) and legacy.edited(body)({"id": "x", "rev": 4})
    assert legacy.edited(body)({"id": "m"})
