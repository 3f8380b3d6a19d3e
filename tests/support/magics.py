"""The `%decoy` magics in this process's one IPython shell, as the workbench tests drive them:
the shell with decoy_lab loaded, and the widgets a cell displayed."""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ipywidgets as W
import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

from decoy_lab.client.connection import Connection

from support.polling import wait_for

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


def connect_by_magic(shell: Any, line: str) -> Connection:
    """`%decoy connect <line>`'s connection: the one it returned, or, where it returned the pairing
    widget, the magics' connection once that pairing finishes in a thread of its own."""
    magics = shell.magics_manager.registry["DecoyMagics"]
    before = magics.connection  # the shell is the process's one IPython: an earlier test's may be current
    conn = shell.run_line_magic("decoy", f"connect {line}")
    if isinstance(conn, Connection):
        return conn
    wait_for(lambda: magics.connection not in (None, before))  # the pairing finished
    return magics.conn()


@contextmanager
def paired_shell(config_dir: Path, url: str, line: str) -> Iterator[Any]:
    """A `decoy_shell` whose connection `%decoy connect URL <line>` made, closed afterwards."""
    with decoy_shell(config_dir) as ip:
        conn = connect_by_magic(ip, f"{url} {line}")
        try:
            yield ip
        finally:
            conn.close()


def quiet_decoy(ip: Any, line: str) -> Any:
    """`%decoy line`'s value; a verb gives back its answer and prints nothing."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = ip.run_line_magic("decoy", line)
    assert out.getvalue() == "", "a verb gives back its answer; it prints nothing"
    return value


def decoy_refused(ip: Any, line: str) -> str:
    """The words of the mistake `%decoy line` is refused with."""
    with pytest.raises(UsageError) as caught:
        quiet_decoy(ip, line)
    return str(caught.value)
