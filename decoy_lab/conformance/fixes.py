"""What to do instead, per rule: the format or the flow the spec asks for, in a line or two.

The scorecard prints a failed rule's fix under its evidence (report.py); `fix_for(rule)` takes the
rule's own `Rule(fix=…)` when it has one, else this table's text for its id. Each text names the bytes or the calls to send, not why the rule matters (the
rule's spec sentence says that). A test holds every rule in rules.RULES to having one.
"""

from __future__ import annotations

from decoy_lab.conformance.rulebook import Rule

FIXES: dict[str, str] = {
    "rows.self-wrap": (
        "Send self_wrap with every row: the row's raw 32-byte key in a headerless envelope to your own "
        "public key ([2-byte BE length][RSA-OAEP-SHA256 wrapped AES key][12-byte IV][AES-256-GCM][16-byte tag])."
    ),
    "rows.owner-opens": (
        "Seal owner_wrap as [0x01][0x02] + an envelope to owner_public_key whose plaintext is the 44-character "
        "ASCII base64 TEXT of the row's 32-byte key (not the raw bytes); ciphertext as [0x01][0x01][nonce][GCM][tag]."
    ),
    "rows.kid-fingerprint": (
        "Set kid = lowercase hex of the first 8 bytes of SHA-256(the raw 32-byte row key), "
        "never of the ciphertext or of the key's base64 text."
    ),
    "rows.about-once": (
        'Give each memory exactly one about value: ["user"], ["account:<id>"] or ["topic:<id>"]; '
        "link topics to each other with a relation row instead."
    ),
    "rows.size-caps": (
        "Keep a topic name to at most 200 characters and a relationType to at most 100 "
        '(a short active-voice phrase such as "is planning").'
    ),
    "rows.self-wrap-opens": (
        "Wrap the same row key in self_wrap as in owner_wrap (raw 32 bytes, to the public key you paired with), "
        "not a fresh random key."
    ),
    "writes.rotate-on-label-removal": (
        "When an edit removes a label, PUT a new key: new kid, the ciphertext under it, owner_wrap, self_wrap "
        "and removed_reasons, all in one request."
    ),
    "writes.rotation-wraps": (
        "A PUT with a new kid must carry owner_wrap and self_wrap of the new key (and grantee_wraps for every "
        "connection still reading it; 409 HOLDERS_MISSING lists them)."
    ),
    "deletes.keep-used-topics": (
        "Delete only the memory; keep a topic row while any committed memory may be filed under it."
    ),
    "deletes.verified": (
        "After DELETE, look at both deleted and refused ids, then GET the memories again and check the row is gone."
    ),
    "topics.reuse-before-create": (
        "Read first; compare topic names normalized (NFKC, lowercase, whitespace collapsed, trimmed, quotes "
        "stripped) and file under the oldest match before creating a topic."
    ),
    "topics.one-post": (
        "Create a new topic in the same POST as its first memory: the entity row, its relation row and the "
        "memory together."
    ),
    "topics.not-the-user": (
        'File a memory about the user with about: ["user"] and entityName "default_user"; never make a topic '
        'named after the user ("me", "user", their name).'
    ),
    "writes.same-rows-on-retry": (
        "After no answer or a 5xx, resend the very same sealed rows (same ids, same bytes); ids already "
        "stored come back under existing."
    ),
    "writes.rev-conflict-reread": (
        "On 409 REV_CONFLICT, GET the row, re-apply your change to what you read (keeping the owner's edit) "
        "and PUT again with the new expected_rev."
    ),
    "writes.read-back": (
        "After saving, keep the returned ids and GET /api/agent/context/memories to fetch those rows back."
    ),
    "reading.preparing-wait": (
        "When a read reports rows as preparing, keep their memory and topic ids and read again later; "
        "never save or create them again."
    ),
    "reading.retry-after": (
        "While rows are preparing, wait retry_after_seconds (from the answer) before the next read."
    ),
    "reading.read-first": (
        "Start every task with GET /api/agent/context/memories (and memory-grantees), open what it serves, "
        "and only then save, edit or delete."
    ),
    "access.poll-grant-request": (
        "After a 201 pending, poll GET /api/agent/grant-request?id=<request_id> every 2–5 s, and keep polling "
        "while it is pending (up to about ten minutes)."
    ),
    "access.read-policies": (
        "Once a poll answers approved or resolved, read GET /api/agent/policies (access, then "
        "policies[].permissions) and act on what the owner granted, not on what you asked."
    ),
    "access.denial-stands": (
        "When a poll answers denied, tell the person what was not granted and stop: send no grant request "
        "again (and never pair again) unless they agree."
    ),
    "access.ask-with-reason": (
        'Ask with {"permissions": [...], one selection (e.g. "record_type": "cards"), "reason": "<one line for '
        "the owner>\"}; a refusal's permission_request goes unchanged."
    ),
    "access.ask-known-keys": (
        "Ask by permission name: permissions plus one selection and a reason; drop resource_id, kind and level "
        "(the older forms) from grant-request and authorization_details."
    ),
    "access.ask-held-never": (
        "Read GET /api/agent/policies (access, policies[].permissions) before asking, and ask only for what "
        "the connection does not hold yet."
    ),
    "pairing.continue-session": (
        "On 401 recovery: continue (SESSION_ENDED, TOKEN_SUPERSEDED) reconnect: POST /oauth/device with the same "
        "client_id (and key), then send the call again; on re_pair, a new pairing; never a refresh."
    ),
    "access.grant-request-not-repair": (
        "On 403 with permission_request, POST it unchanged to /api/agent/grant-request, wait for approval, "
        "then retry the call; never pair again."
    ),
    "pairing.poll-interval": (
        "Poll POST /oauth/token no more often than the interval seconds the device answer gave, until expires_in."
    ),
    "pairing.slow-down": ("On slow_down, add 5 seconds to the poll interval, for that poll and every later one."),
    "pairing.refresh-once": (
        "On 401 TOKEN_EXPIRED, POST /oauth/token grant_type=refresh_token once, keep the new refresh token "
        "and never send the used one again."
    ),
    "pairing.no-token-in-url": (
        "Send the access token only as the Authorization: Bearer header, never in the URL or query."
    ),
    "writes.keep-other-fields": (
        "Re-seal the plaintext you just read with only your change applied: keep every other field (the "
        "owner's labels too) and the id."
    ),
    "pairing.ask-by-name": (
        'Name the permissions you need in authorization_details (e.g. [{"permissions": ["memory.save"]}]) '
        "and a display name in POST /oauth/device."
    ),
    "wraps.not-too-far": (
        "Wrap a row's key only to the connections memory-grantees lists for it, each under the via reasons "
        "listed for that connection."
    ),
    "wraps.every-reader": (
        "Wrap the key to every connection memory-grantees lists for the row's labels (grantee_wraps), in the "
        "same request as the save or the rotation."
    ),
    "limits.retry-after": ("On 429, wait retry_after_seconds from the answer, then send the same request again."),
    "outcome.finished": (
        "Send each write as the spec's format has it (the refusal's code and message say which field) and exit 0 "
        "once the rows are read back; a plan is not a save."
    ),
    "contents.no-secrets": (
        "Keep passwords, booking references and keys out of a memory's text: store them as the account's "
        "secret fields, and write only that the account has them."
    ),
    "contents.outside-ciphertext": (
        "Send only id, kid, ciphertext, owner_wrap, self_wrap (and grantee_wraps, self_via); text, categories "
        "and names go inside the sealed plaintext."
    ),
    "contents.correct-by-id": (
        "Correct a memory with PUT /api/agent/context/memories {id, expected_rev, ciphertext} of the same id; "
        "never POST a new memory beside it."
    ),
    "wraps.share-on-add": (
        "After a PUT that only adds labels (same key, no kid), POST /api/agent/context/memory-wraps "
        "{row_id, kid, wraps: [{token_id, via, wrapped_key}]} for each connection the new labels newly reach."
    ),
    "writes.others-text-only": (
        "Editing a memory another wrote, change its text only: re-seal its plaintext with the same "
        "categories, about and topic, byte for byte, under its key (a PUT with no kid)."
    ),
    "contents.account-by-id": (
        'File a memory about an account with about: ["account:<the account\'s uuid>"] and no entityName; '
        "the account's name stays on the account."
    ),
    "contents.no-copy-to-relabel": (
        "Change a memory's labels with a PUT of the same id (a rotation when one is removed), "
        "never by posting a copy under the new labels."
    ),
    "contents.no-fixture-wraps": (
        "Generate every key, nonce and wrap at run time for the user's own keys; never send the spec "
        "example's ciphertext, owner_wrap, self_wrap or kid 5e45d83427d094d8."
    ),
    "contents.metadata-files-nothing": (
        'File a memory under its topic with about: ["topic:<id>"] (and entityName its name); keep metadata to '
        "free notes, with no topic, topics or topic_name key."
    ),
    "pairing.client-uri-public": (
        "Send client_uri as your site's https address on a public domain name (https://agent.example.com): "
        "no IP address, localhost or internal name, no port, no user:password@; or leave it out."
    ),
    "contents.fresh-keys": (
        "Make a random 32-byte key for every row and a random 12-byte nonce for every ciphertext; never reuse either."
    ),
    "accounts.no-credentials-in-memory": (
        "Send the login password only to POST /api/agent/accounts/{id}/credential (a headerless envelope to the "
        "account key); a memory or the record's notes may say the account has one, never what it is."
    ),
    "accounts.api-key-field": (
        'Store an API key with POST /api/agent/accounts/{id}/fields as {"fieldType":"concealed-string","label",'
        '"value"} under a fresh field key; never as the password, in the record or in a memory.'
    ),
    "accounts.idempotency-key": (
        "Send an idempotency_key (at most 128 characters) with POST /api/agent/decoys, and the same key with the "
        "same body on every resend: a repeat answers the original address."
    ),
    "accounts.one-address": (
        "Create one account per sign-up and reuse its account_id; after a timeout resend the same body with the "
        "same idempotency_key, never a new key."
    ),
    "accounts.owner-opens": (
        "Seal encrypted_password as a headerless envelope (no [0x01][0x02] header, no JSON) of the password's "
        "UTF-8 bytes to GET /api/agent/accounts/public-key; the record as [0x01][0x02] + an envelope to the owner."
    ),
    "accounts.unlock-retry-after": (
        "On `preparing`, wait retry_after_seconds before sending the same unlock again; reading sooner does "
        "not make the phone answer sooner."
    ),
    "accounts.unlock-pending": (
        "Keep the request id of a `pending` unlock and poll GET /api/agent/unlock/{id} every 2–3 s until "
        "ready, denied or expired; never ask again meanwhile."
    ),
    "accounts.edit-polled": (
        "A 202 from POST …/edits is `pending`: poll GET /api/agent/decoys/{id}/edits/{edit_id} until "
        "`applied` before saying the address changed."
    ),
    "accounts.edit-once": (
        "Queue an address edit once and wait for it: a pending edit is never dropped, so a second one applies"
        " the change twice."
    ),
}


def fix_for(rule: Rule) -> str:
    """What to do instead when `rule` fails: its own `fix`, else this table's ("" for none yet)."""
    return rule.fix or FIXES.get(rule.id, "")
