"""`%decoy` / `%%decoy` in IPython.

magics.py  the magics: parse, dispatch, render
"""
