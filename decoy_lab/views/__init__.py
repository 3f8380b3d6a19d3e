"""Views of a vault: pure functions from a Vault to a graph, a drawing or a matrix.

topicmap.py      the topic map as a networkx graph and a matplotlib drawing
reach_matrix.py  memories × connections: who can read what, and why
"""
