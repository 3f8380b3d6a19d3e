"""`%decoy` / `%%decoy` in IPython.

account_handlers.py  the account verbs (account-new, password, field-add, unlock, …): a secret
               asked for at a hidden prompt, never typed on the line
agents.py      %decoy inspect and %decoy check: an agent's traffic shown, or judged
clean.py       the tracked notebooks saved without outputs (JupyterLab's pre-save hook)
completion.py  what Tab offers on a %decoy line, and the names a suggestion picks from
handlers.py    the notebook's verbs, one function each, and RUN: the table from verb to handler
labserver.py   a Jupyter server extension: the kernel's websocket sent without Nagle's delay,
               and clean.py's save hook on a server started by hand
magics.py      the magics: parse, dispatch, raise a mistake as one line
"""
