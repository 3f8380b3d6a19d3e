"""The `decoy-lab` command.

terminal.py     what every sub-command shares: notes, tables, JSON, the status line, guarded
connections.py  connect, connections, status, access, request, unpair
reading.py      memories, topics, links, rows, app-view
writing.py      save, edit, delete, resend
account_writes.py  account-new, account-save, account-delete, password, field-add, field-set,
                field-delete, unlock, protect, decoy-rename, decoy-edit, decoy-update
traces.py       unseal, seal, dump
sync.py         sync, cache
commands.py     the table from verb to command, registered on the parser
cli.py          the entry point and its parser
"""
