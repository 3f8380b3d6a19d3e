"""The spec's write rules, in one place: save, edit, delete and share over a session (session.py).

- An unknown outcome (network error, timeout, 5xx) resends the SAME sealed rows or body, never
  new ones (`Session.send`, up to `retries` times); after a resend the rows are read
  back and sent once more if any is not served yet (the server fills in a missing wrap).
- A definite refusal is never retried. `REV_CONFLICT` re-reads, re-applies and retries after a
  short random wait, so writers racing on one memory take turns (and stops when the served
  memory already reads as asked: an earlier unanswered attempt landed).
- `HOLDERS_MISSING` wraps the rotated key to every listed holder and sends again.
- A legacy space row is edited in its space (legacy.py); once the owner's phone has moved it to
  its own key (`MEMORY_MOVING`), the same changes apply to it here under the per-memory rule.
  Deleting is the same: legacy row ids go to rows/delete, and those moved meanwhile are deleted
  here as memories; one call takes memory ids and legacy row ids mixed.
- Topic rows written for a change that is then definitely refused are deleted (best effort);
  after an unknown outcome they are kept, since a committed memory may already use them.

One module per verb, each importing only those above it:

    sending.py  each route's answer shape, send, post_rows, put_journaled, delete_quietly, checked_text
    resend.py   the journal at work: run_entry, resend_entry, resend, settle_pending, unsettled, drop_unused_topic
    topics.py   resolve_link, new_topic, remember_topic, find_or_refuse_new
    save.py     save
    edit.py     edit, edit_loop, has_changes, put (HOLDERS_MISSING), UNSET
    delete.py   delete, delete_memories, DeleteResult
    share.py    share

Import from the package (`from decoy_lab.protocol.writes import save`), not from the modules.
"""

from __future__ import annotations

from decoy_lab.protocol.writes.delete import DeleteResult, delete
from decoy_lab.protocol.writes.edit import UNSET, edit
from decoy_lab.protocol.writes.resend import resend
from decoy_lab.protocol.writes.save import save
from decoy_lab.protocol.writes.sending import MEMORIES, accounts_for
from decoy_lab.protocol.writes.share import share

# The class's public path, which its notebook formatter names (workbench/display.py).
DeleteResult.__module__ = __name__

__all__ = [
    "MEMORIES",
    "UNSET",
    "DeleteResult",
    "accounts_for",
    "delete",
    "edit",
    "resend",
    "save",
    "share",
]
