"""The public surface is small, explicit and pinned (a change here is a deliberate API change)."""

import subprocess
import sys

import decoy_lab

PINNED = [
    "Access",
    "AgentKey",
    "Connection",
    "DecoyError",
    "GrantRequest",
    "Inspector",
    "Memory",
    "RecipientKeys",
    "Sandbox",
    "Trace",
    "UnreadableRow",
    "Vault",
    "WireFormatError",
    "__version__",
    "load_ipython_extension",
    "open_blob",
]


def test_all_is_sorted_pinned_and_every_name_resolves():
    assert decoy_lab.__all__ == sorted(decoy_lab.__all__) == sorted(PINNED)
    for name in decoy_lab.__all__:
        assert getattr(decoy_lab, name) is not None


def test_unknown_names_are_attribute_errors():
    try:
        decoy_lab.NoSuchThing
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_the_package_does_not_pull_in_pandas_or_the_sandbox():
    code = "import sys, decoy_lab; print('pandas' in sys.modules, 'starlette' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
