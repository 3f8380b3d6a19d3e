"""The README's first screen holds for a newcomer with this checkout: the commands it gives exist,
the notebooks it lists are the notebooks there are, every link it makes opens, and it promises no
package index entry or hosted badge a user of this checkout cannot reach."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from decoy_lab.workbench import verbs

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
START = README[: README.index("## In a notebook")]


def test_the_start_commands_exist_and_the_wheel_is_built_and_run_by_a_test():
    make = (ROOT / "Makefile").read_text()
    for target in ("lab", "test"):
        assert f"make {target}" in START and re.search(rf"^{target}:", make, re.M), target
    assert "python -m pip wheel --no-deps -w dist ." in START and "pip install dist/decoy_lab-*.whl" in START
    wheel_test = (ROOT / "tests" / "package" / "test_wheel.py").read_text()
    assert '"wheel", "--no-deps"' in wheel_test and '"decoy-lab", "--help"' in wheel_test


def test_no_promise_a_checkout_cannot_keep():
    assert "pip install decoy-lab" not in README  # no package index entry to install from
    assert "mybinder.org" not in README  # the badge pointed at a repository this checkout is not


def test_the_notebooks_listed_are_the_notebooks_there_are():
    listed = set(re.findall(r"^- `(\d\d-[a-z-]+)` — ", START, re.M))
    assert listed == {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}


def test_the_tour_says_what_the_first_cells_show():
    """The first screen says the memories take a few seconds and `--wait` waits: the first read
    after pairing is "on their way" (spec 000's `preparing`), as the notebook's own text says."""
    assert "`%decoy memories --wait` waits for them" in START
    tour = (ROOT / "notebooks" / "01-tour.ipynb").read_text()
    assert "df = %decoy memories --wait" in tour and 'approves\\n",\n    "asks at once' not in tour


def test_every_verb_the_notebook_table_names_exists():
    table = README[README.index("| sub-command |") : README.index("**The recipe view**")]
    for name in re.findall(r"^\| `(?:%%decoy )?([a-z-]+)", table, re.M):
        assert name in verbs.BY_NAME, name


def test_every_relative_link_opens():
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            assert (doc.parent / target).exists(), (doc.name, target)
        for target, anchor in re.findall(r"\]\(([^)#:]*)#([^)]+)\)", doc.read_text(encoding="utf-8")):
            page = (doc.parent / target) if target else doc
            heads = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)
            assert anchor in {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in heads}, anchor


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)


def the_cli_block() -> str:
    part = README[README.index("## On the command line") :]
    return shell_blocks(part[: part.index("\n## ", 3)])[0]


def test_the_cli_section_says_how_decoy_lab_gets_on_the_path():
    """Issue: after `make lab`, `decoy-lab …` was "command not found". The README says to activate
    the venv `make lab` made (the Makefile's VENV) before the first `decoy-lab` it gives a shell."""
    make = (ROOT / "Makefile").read_text()
    venv = re.search(r"^VENV\s*\?=\s*(\S+)", make, re.M).group(1)
    block = the_cli_block()
    first = block.splitlines()[0]
    assert first.split("#")[0].strip() == f"source {venv}/bin/activate"
    assert block.index(first) < block.index("decoy-lab")
    start_shell = START[START.index("make test") :]
    assert f"source {venv}/bin/activate" in start_shell and f"{venv}/bin/decoy-lab" in start_shell


def _readme_script(block: str, port: int, venv_bin: Path) -> str:
    """The block as bash runs it: activation as its effect on PATH (the venv the tests run in),
    the sandbox on a free port instead of 8787, and after a line that starts a server in the
    background, the pause a person takes typing the next line (until the port answers)."""
    out = ["set -euo pipefail", "set -x"]
    for line in block.replace("\\\n", " ").splitlines():
        command = line.split("  #")[0].rstrip()
        if command.startswith("source ") and command.endswith("/bin/activate"):
            out.append(f'export PATH="{venv_bin}:$PATH"  # what {command} does for PATH')
            continue
        command = command.replace("8787", str(port))
        if command == "decoy-lab sandbox &":
            command = f"decoy-lab sandbox --port {port} &"
        out.append(command)
        if command.endswith("&"):
            out.append(f"until (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; do sleep 0.2; done")
    return "\n".join(out) + "\n"


@pytest.mark.timeout(300)
def test_the_cli_sequence_runs_as_written_in_a_fresh_config(tmp_path):
    """Issues: `decoy-lab` not on the PATH, and the sequence stopping at its third line (a read
    right after `connect` exited 2 while the keys were on their way, saying "84 memories … on
    their way" for a vault of 59). The README's shell block, top to bottom, in bash with
    `set -e`, in a fresh HOME and config directory against the sandbox it starts itself: every
    line succeeds, the first read waits for the keys and says it waits, and counts rows as rows."""
    import os
    import signal
    import subprocess
    import sys

    from support.lab import free_port

    port = free_port()
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DECOY_", "XDG_", "VIRTUAL_ENV", "PYTHON")) and k not in ("HOME", "PATH")
    }
    env |= {
        "HOME": str(home),
        "PATH": os.defpath,
        "DECOY_LAB_CONFIG_DIR": str(tmp_path / "config"),
        "DECOY_LAB_KEYRING": "0",
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "COLUMNS": "160",
    }
    script = _readme_script(the_cli_block(), port, Path(sys.executable).parent)
    proc = subprocess.Popen(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=240)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the sandbox, if a failed line left it running
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, f"{script}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-5000:]}"
    assert "command not found" not in err
    waited = re.search(r"waiting for (\d+) rows \(memories, topics, links\) on their way", err)
    assert waited, err
    assert re.search(r"\b4 of \d+ memories shown", err) and "Lisbon trip" in out
    assert f"{waited.group(1)} memories" not in err  # rows are never called memories
    assert "Prefers window seats." in out and "Hello from the README." in out
    assert "dry run: nothing was sent" in err


def test_the_offline_python_examples_run_as_written():
    """The "In plain Python" blocks that need no server run as they are (one imported `sealing`
    from the package root, where it is not: `from decoy_lab import sealing` failed)."""
    part = README[README.index("## In plain Python") :]
    blocks = re.findall(r"^```python\n(.*?)^```", part[: part.index("\n## ", 3)], re.M | re.S)
    offline = [b for b in blocks if "Sandbox" not in b]
    assert len(offline) == 2
    for block in offline:
        exec(compile(block, "README.md", "exec"), {})
