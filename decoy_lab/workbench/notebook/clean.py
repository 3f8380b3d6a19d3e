"""The tracked notebooks stay as committed: no outputs, no execution counts, no run-time metadata.

`pre_save_hook` below is JupyterLab's pre-save hook: when Lab saves (autosave too) a notebook of a
decoy_lab checkout's `notebooks/`, the file keeps its cells and drops what a run adds. Chosen over
a git clean filter because it holds with nothing configured in git and before anything is staged:
the working copy itself never fills with outputs, so `git status` stays clean after a Run All. A
notebook saved anywhere else keeps its outputs. Executed copies, for reading and for the tests,
are written under `build/`.

What is tracked is decided by the file's real place on disk (the contents manager's `root_dir`
joined with the API path, symlinks resolved), never by the API path: `make lab` roots the server
at `notebooks/` (it opens `notebooks/01-tour.ipynb`), so Lab saves "/01-tour.ipynb" there, and a
`jupyter lab` of one's own may be rooted at the checkout, at `notebooks/` or above both. A file is
tracked when a folder above it is named `notebooks` and sits in a decoy_lab checkout (`checkout`).

The hook is installed twice over, and runs once: `make lab` names it in `scripts/lab_config.py`,
and the package's Jupyter server extension (labserver.py, enabled wherever decoy_lab is installed)
registers it on any server that does not name it already, so a `jupyter lab` started by hand in
the checkout keeps the notebooks clean too.

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

TRACKED = "notebooks"  # the folder of a checkout whose notebooks are saved as committed
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


def is_checkout(folder: Path) -> bool:
    """`folder` is a decoy_lab checkout: its package, its project file and `make lab`'s config."""
    return all(
        (folder / part).is_file() for part in ("pyproject.toml", "decoy_lab/__init__.py", "scripts/lab_config.py")
    )


def is_tracked(file: Path) -> bool:
    """`file` (an absolute path, resolved here) lies in the `notebooks/` folder of a checkout."""
    real = file.resolve()
    return any(folder.name == TRACKED and is_checkout(folder.parent) for folder in real.parents)


def os_path(contents_manager: Any, path: str) -> Path | None:
    """The absolute file an API path names: the contents manager's `root_dir` joined with it
    (None for a manager that keeps no files of its own)."""
    root = getattr(contents_manager, "root_dir", None)
    if not root:
        return None
    return Path(root).expanduser() / path.strip("/")


def _on_disk(file: Path) -> dict | None:
    """The notebook metadata of the file being saved over (None: no such file, or unreadable)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    meta = data.get("metadata") if isinstance(data, dict) else None
    return meta if isinstance(meta, dict) else None


def pre_save_hook(*, model: dict, path: str, contents_manager: Any = None, **_: Any) -> None:
    """A jupyter_server `ContentsManager.pre_save_hook`: a tracked notebook is saved stripped."""
    if model.get("type") != "notebook" or not model.get("content"):
        return
    file = os_path(contents_manager, path)
    if file is not None and is_tracked(file):
        stripped(model["content"], _on_disk(file))


def install(contents_manager: Any) -> bool:
    """Register `pre_save_hook` on a server's contents manager unless it runs there already (as
    `make lab`'s config names it); whether it was registered. The server extension calls it once
    per server."""
    if getattr(contents_manager, "pre_save_hook", None) is pre_save_hook:
        return False
    register = getattr(contents_manager, "register_pre_save_hook", None)
    if register is None:  # a contents manager older than jupyter_server 2
        return False
    register(pre_save_hook)
    return True
