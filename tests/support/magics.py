"""The `%decoy` magics in this process's one IPython shell, as the workbench tests drive them:
the shell with decoy_lab loaded, and the widgets a cell displayed."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ipywidgets as W
import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@contextmanager
def decoy_shell(config_dir: Path) -> Iterator[Any]:
    """The shell with `%load_ext decoy_lab` run, its profiles in `config_dir` while this lasts."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DECOY_LAB_CONFIG_DIR", str(config_dir))
        shell = start_ipython() or get_ipython()  # one shell per process: another module may have started it
        shell.run_line_magic("load_ext", "decoy_lab")
        yield shell


def shown_widgets(captured: Any) -> list[W.Widget]:
    """The widgets a cell displayed (by the model ids in its captured outputs)."""
    ids = [o.data[WIDGET_VIEW]["model_id"] for o in captured.outputs if WIDGET_VIEW in o.data]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the registry is the only way from an id back to it
        return [W.Widget.widgets[i] for i in ids]
