"""Benchmarks for decoy_lab: `python -m bench` runs them all in one process, on one set of
rows, and prints every figure next to its target (PASS / MISS with the measured ratio).

Each file measures one thing and returns `Figure`s; `__main__` runs them in order and
`report` prints the table and the machine it ran on. `--quick` scales sizes down for a
smoke run; `--no-targets` prints figures without judging them.
"""
