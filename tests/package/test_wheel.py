"""The package a user installs: `pip install decoy-lab` gives a wheel that carries its type
information (`py.typed`) and its licence, and that works with no source tree beside it — the
sandbox starts, a connection pairs and loads, and `%load_ext decoy_lab` runs in IPython.

Offline and quick: the wheel is built with the build backend already installed (no isolated
build environment to download), and the fresh virtual environment borrows the dependencies of
the running one through a `.pth` file instead of downloading them; decoy_lab itself comes only
from the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from support.source import ROOT

SMOKE = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import decoy_lab
    from decoy_lab import Connection, Sandbox

    where = Path(decoy_lab.__file__).resolve()
    assert where.is_relative_to(Path(sys.prefix).resolve()), where  # the installed copy, not a tree
    assert (where.parent / "py.typed").exists()

    with Sandbox.start() as sb:
        conn = Connection.pair(sb.url, name="From the wheel")
        sb.owner.share()
        vault = conn.load()
        print("summary:", vault.summary)

        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "decoy_lab")
        assert "decoy" in shell.magics_manager.magics["line"], "the %decoy magic is registered"
        print("magic: %decoy loaded")
    """
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", out, ROOT],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (found,) = out.glob("decoy_lab-*.whl")
    return found


def test_the_wheel_carries_its_types_and_its_licence_and_no_tests(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "decoy_lab/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "decoy_lab/vocab.py" in names and "decoy_lab/sandbox/app.py" in names
    assert not [n for n in names if n.startswith(("tests/", "notebooks/", "bench/"))]
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "Name: decoy-lab" in text and "License" in text


def test_installed_from_the_wheel_it_pairs_loads_and_loads_as_an_extension(wheel, tmp_path):
    """README: "build a wheel in the clone and install it" — then `decoy-lab --help`, the
    README's plain-Python example and `%load_ext decoy_lab` work from the installed package alone."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=60)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # The dependencies come from this interpreter's site-packages, added after the venv's own (a
    # plain path line: the .pth files there, such as an editable decoy_lab, are not run).
    (site / "borrowed-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert install.returncode == 0, install.stderr[-3000:]

    work = tmp_path / "elsewhere"  # no source tree here, nor on the path
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"DECOY_LAB_CONFIG_DIR": str(tmp_path / "config"), "DECOY_LAB_KEYRING": "0", "IPYTHONDIR": str(tmp_path)}
    run = subprocess.run([python, "-c", SMOKE], cwd=work, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    assert "memories" in run.stdout and "magic: %decoy loaded" in run.stdout, run.stdout
    helped = subprocess.run(
        [venv / "bin" / "decoy-lab", "--help"], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    assert helped.returncode == 0 and helped.stdout.startswith("usage: decoy-lab"), helped.stderr[-2000:]
