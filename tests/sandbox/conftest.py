"""The sandbox as an independent check of the spec: its routes, store, owner phone and faults. `lab`
(one in-process sandbox on a fake clock, `support.sandbox_kit`) comes from the root conftest."""
