"""The memory model (`decoy_lab.memory`): building, reading, topics, edits and reach, offline.
The cast of keys (`c`, `keys`) comes from the root conftest; helpers live in `support.memory_cast`."""
