"""Bytes: the wire layouts as data, the crypto primitives, hex dumps and JSON spans. No formats
beyond bytes, no network.

    layouts.py    the byte layouts of Decoy rows, declared once as data
    crypto.py     AES-256-GCM, RSA-OAEP-SHA256 and the agent's RSA key
    hexdump.py    annotated hex dumps of a blob and its fields (text and HTML)
    jsonspans.py  byte ranges of the members of a JSON document
"""
