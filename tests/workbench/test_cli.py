import subprocess
import sys


def test_console_script_prints_version():
    out = subprocess.run([sys.executable, "-m", "decoy_lab.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.startswith("decoy-lab ")
