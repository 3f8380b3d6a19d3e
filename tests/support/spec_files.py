"""Where the spec the project builds from is: shared/spec beside the checkout (or $DECOY_SPEC_DIR),
and which file holds each document."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SPEC_FILES = {"000": "000_8a05c629879a3795.txt", "001": "001_0c822ffdca2b03d6.by-operation.txt"}


def spec_dir() -> Path:
    return Path(os.environ.get("DECOY_SPEC_DIR") or ROOT.parent / "shared" / "spec")  # shared/ beside the checkout
