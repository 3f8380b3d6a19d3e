"""The workbench: what a person types and sees. It renders and dispatches; the work is below.

display.py  formatters and small display helpers
verbs/      the verb table shared by the notebook and the shell
notebook/   the %decoy magics
shell/      the decoy-lab command
"""
