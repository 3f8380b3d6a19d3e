"""decoy_lab: a Jupyter/IPython workbench for Decoy's end-to-end-encrypted agent memory API.

`%load_ext decoy_lab` registers the `%decoy` magics.
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load_ipython_extension"]


def load_ipython_extension(ipython):  # pragma: no cover - exercised through IPython
    from .magics import DecoyMagics

    ipython.register_magics(DecoyMagics)
