"""`Connection`: the facade a user holds; it delegates to the rules, the store and the vault.

connection.py  Connection
"""
