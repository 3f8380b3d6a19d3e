"""A JupyterLab of its own for browser tests and benchmarks: temporary HOME, config, data and
runtime directories, a random token and a free port, serving a copy of notebooks/ (or a folder
given). `running_lab(tmp)` yields (base_url, token) and stops the server afterwards; `lab_in(tmp,
cwd, args=…)` starts one as a command line does (`make lab`'s), rooted where its arguments say."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def isolated_env(tmp: Path) -> dict[str, str]:
    """A HOME and Jupyter dirs of the test's own, so no user setting leaks in or out."""
    env = dict(os.environ)
    dirs = {
        "HOME": tmp / "home",
        "JUPYTER_CONFIG_DIR": tmp / "jupyter-config",
        "JUPYTER_RUNTIME_DIR": tmp / "jupyter-runtime",
        "IPYTHONDIR": tmp / "ipython",
        "DECOY_LAB_CONFIG_DIR": tmp / "decoy-config",
        "XDG_CACHE_HOME": tmp / "cache",
    }
    for key, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        env[key] = str(path)
    # Keep the news prompt from covering the notebook.
    labconfig = dirs["JUPYTER_CONFIG_DIR"] / "labconfig"
    labconfig.mkdir(exist_ok=True)
    (labconfig / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    # Render every cell (no virtual scrolling), so outputs far down the tour exist in the page.
    tracker = dirs["JUPYTER_CONFIG_DIR"] / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@contextmanager
def running_lab(tmp: Path, notebooks: Path | None = None, *, args: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """JupyterLab serving a copy of `notebooks` (default: the repository's) under notebooks/;
    `args` are further command-line options (e.g. `make lab`'s --config)."""
    root = tmp / "work"
    shutil.copytree(notebooks or ROOT / "notebooks", root / "notebooks")
    with lab_in(tmp, root, args=(f"--ServerApp.root_dir={root}", *args)) as served:
        yield served


@contextmanager
def lab_in(tmp: Path, cwd: Path, *, args: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """JupyterLab started in `cwd` with `args` and nothing else chosen for it (no root_dir: a
    notebook path among `args` roots it at that notebook's folder, as `make lab` does); its own
    HOME, config and port (isolated_env), its log in tmp/lab.log. Yields (base_url, token)."""
    port, token = free_port(), secrets.token_hex(16)
    env = isolated_env(tmp)
    log_path = tmp / "lab.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}",
            "--LabApp.expose_app_in_browser=True",
            "--ServerApp.port_retries=0",
            "--LabApp.extension_manager=readonly",
            *args,
            *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        ],
        cwd=cwd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("JupyterLab did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(0.25)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# `make lab`'s recipe, and the arguments it gives JupyterLab from the checkout (rooted at notebooks/).
MAKE_LAB = "$(BIN)/jupyter lab $(ROOT_FLAG) --config=scripts/lab_config.py $(LAB_ARGS) notebooks/01-tour.ipynb"
MAKE_LAB_ARGS = ("--config=scripts/lab_config.py", "notebooks/01-tour.ipynb")


def checkout_copy(to: Path) -> Path:
    """A copy of this checkout's tracked files (as they are in the working tree), a git
    repository of its own with them committed: what a fresh clone holds."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        if (ROOT / name).is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, to / name)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"]
    for words in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "a clone"]):
        subprocess.run([*git, *words], cwd=to, check=True, capture_output=True)
    return to


def git_status(checkout: Path, *paths: str) -> str:
    """`git status --porcelain PATHS` in `checkout`."""
    return subprocess.run(
        ["git", "status", "--porcelain", *paths], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout


# JavaScript for page.wait_for_function / evaluate, driving the notebook JupyterLab has open.
KERNEL_READY = (
    "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
    " const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;"
    " return !!k && k.connectionStatus === 'connected'; }"
)
ALL_RAN = (
    "() => { const nb = window.jupyterapp.shell.currentWidget.content;"
    " const cells = nb.widgets.filter(c => c.model.type === 'code');"
    " const failed = cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));"
    " const last = cells[cells.length - 1];"
    " return failed || (last.model.executionCount !== null"
    "  && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'); }"
)
ERRORS = (
    "() => window.jupyterapp.shell.currentWidget.content.widgets"
    ".flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])"
    ".filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)"
)
# cell `i` run on its own; resolves, once it has run, to the milliseconds it held the notebook
RUN_CELL = """async (i) => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  nb.activeCellIndex = i;
  const cell = nb.widgets[i];
  const t0 = performance.now();
  await window.jupyterapp.commands.execute('notebook:run-cell');
  while (cell.model.executionCount === null) { await new Promise(r => setTimeout(r, 20)); }
  return performance.now() - t0;
}"""


def notebook_json(cells: list[str]) -> str:
    """A notebook of code cells (no outputs) on the python3 kernel, as a test writes one."""
    code = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s} for s in cells]
    kernel = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    return json.dumps({"cells": code, "metadata": kernel, "nbformat": 4, "nbformat_minor": 5})


def open_notebook(page, base: str, token: str, path: str) -> None:
    """Open `path` in JupyterLab and wait until its kernel is connected."""
    page.goto(f"{base}/lab/tree/{path}?token={token}")
    page.wait_for_function(KERNEL_READY, timeout=90_000)


def run_notebook(page, base: str, token: str, path: str, timeout_ms: int = 240_000) -> list[str]:
    """Open `path` in JupyterLab, run every cell, and return the errors its outputs show."""
    open_notebook(page, base, token, path)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(ALL_RAN, timeout=timeout_ms)
    return page.evaluate(ERRORS)


@contextmanager
def notebook_page(prefix: str, cells: list[str], viewport: dict[str, int]) -> Iterator[Any]:
    """A JupyterLab of its own with a notebook of `cells`, every cell run in Debian's chromium:
    yields the page (a benchmark times what it shows); raises when a cell failed."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM, FLAGS

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        (Path(tmp) / "nb").mkdir()
        (Path(tmp) / "nb" / "bench.ipynb").write_text(notebook_json(cells))
        with running_lab(Path(tmp), Path(tmp) / "nb") as (base, token), sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
            try:
                page = browser.new_context(viewport=viewport).new_page()
                errors = run_notebook(page, base, token, "notebooks/bench.ipynb")
                if errors:
                    raise RuntimeError(f"the benchmark notebook failed: {errors}")
                yield page
            finally:
                browser.close()
