"""Byte layouts, primitives and recipes (`wire`, `crypto`, `sealing`, `trace`, `hexdump`, `dump`), checked
against Node's WebCrypto where formats are concerned. The keys come from the root conftest."""
