"""The tracked notebooks stay as committed: no outputs, no execution counts, no run-time metadata.

`make lab` starts JupyterLab with `scripts/lab_config.py`, which sets `pre_save_hook` below: when
Lab saves (autosave too) a notebook of the checkout's `notebooks/`, the file keeps its cells and
drops what a run adds. Chosen over a git clean filter because it holds with nothing configured in
git and before anything is staged: the working copy itself never fills with outputs, so `git
status` stays clean after a Run All. A notebook saved anywhere else keeps its outputs. Executed
copies, for reading and for the tests, are written under `build/`.

The notebook's own metadata is kept as the file on disk has it. The committed notebooks store the
kernel and language info as the project's kernel (ipykernel on Python 3.11) reports them, so
JupyterLab, which writes the kernel's info into the open notebook, finds nothing to change and
does not mark a notebook it has just opened as modified.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

TRACKED = "notebooks/"  # the API path (relative to the server's root, the checkout) of the tracked notebooks
RUN_METADATA = ("execution", "collapsed", "scrolled")  # what running or viewing adds to a cell


def stripped(nb: MutableMapping[str, Any], metadata: dict | None = None) -> MutableMapping[str, Any]:
    """`nb` (a notebook as JSON data) with every code cell's outputs and execution count cleared
    and run-time cell metadata dropped; its own metadata replaced by `metadata` when given (what
    the file holds), else only cleared of widget state. Changed in place."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        meta = cell.get("metadata") or {}
        for key in RUN_METADATA:
            meta.pop(key, None)
    if metadata is not None:
        nb["metadata"] = metadata
    nb.get("metadata", {}).pop("widgets", None)  # widget state is an output too
    return nb


def _on_disk(contents_manager: Any, path: str) -> dict | None:
    """The notebook metadata of the file being saved over (None: no such file, or unreadable)."""
    try:
        data = json.loads(Path(contents_manager._get_os_path(path)).read_text(encoding="utf-8"))
    except (AttributeError, OSError, ValueError):
        return None
    meta = data.get("metadata") if isinstance(data, dict) else None
    return meta if isinstance(meta, dict) else None


def pre_save_hook(*, model: dict, path: str, contents_manager: Any = None, **_: Any) -> None:
    """A jupyter_server `FileContentsManager.pre_save_hook`: a tracked notebook is saved stripped."""
    if model.get("type") == "notebook" and path.lstrip("/").startswith(TRACKED) and model.get("content"):
        stripped(model["content"], _on_disk(contents_manager, path))
