"""Hostile and broken inputs: answers, bytes, concurrency and faults must end in a typed DecoyError,
never a raw exception or a hang. Hostile answers to serve live in `support.answers`."""
