"""The tracked notebooks stay as committed: no outputs, no execution counts, no run-time metadata.

`make lab` starts JupyterLab with `scripts/lab_config.py`, which sets `pre_save_hook` below: when
Lab saves (autosave too) a notebook of the checkout's `notebooks/`, the file keeps its cells and
drops what a run adds. Chosen over a git clean filter because it holds with nothing configured in
git and before anything is staged: the working copy itself never fills with outputs, so `git
status` stays clean after a Run All. A notebook saved anywhere else keeps its outputs. Executed
copies, for reading and for the tests, are written under `build/`.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

TRACKED = "notebooks/"  # the API path (relative to the server's root, the checkout) of the tracked notebooks
RUN_METADATA = ("execution", "collapsed", "scrolled")  # what running or viewing adds to a cell
KEPT_LANGUAGE_INFO = ("name",)  # the kernel fills in its version on connect; that is the machine's, not the notebook's


def stripped(nb: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """`nb` (a notebook as JSON data) with every code cell's outputs and execution count cleared,
    run-time cell metadata dropped and the language info cut to its name; changed in place."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        meta = cell.get("metadata") or {}
        for key in RUN_METADATA:
            meta.pop(key, None)
    info = nb.get("metadata", {}).get("language_info")
    if isinstance(info, dict):
        for key in [k for k in info if k not in KEPT_LANGUAGE_INFO]:
            del info[key]
    nb.get("metadata", {}).pop("widgets", None)  # widget state is an output too
    return nb


def pre_save_hook(*, model: dict, path: str, contents_manager: Any = None, **_: Any) -> None:
    """A jupyter_server `FileContentsManager.pre_save_hook`: a tracked notebook is saved stripped."""
    if model.get("type") == "notebook" and path.lstrip("/").startswith(TRACKED) and model.get("content"):
        stripped(model["content"])
