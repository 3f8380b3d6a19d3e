"""The `decoy-lab` command.

cli.py       the entry point and its parser
commands.py  the verbs over a saved connection, printed for a terminal
"""
