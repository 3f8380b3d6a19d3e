"""Views of a vault: pure functions from a Vault to a graph, a drawing or a matrix.

The Map (the topic map), one module per concern, each importing only those above it:

    nodes.py         its node ids, names and colours; reading a vault's frames
    selection.py     a node by name or id, parents and children, the filters, a node's memories and why
    packing.py       circles packed around a centre without overlapping
    layout.py        where each node sits: rings (a small map) or clusters by parent and type
    placement.py     where a label fits beside its dot, clear of every label, dot and key
    clusterdraw.py   a large map's matplotlib drawing: its clusters, named
    drawing.py       the matplotlib drawing
    graph.py         TopicGraph and build_graph; select_memories (it builds the graph)
    mapfile.py       a vault's built map as plain data, for the sealed file it is kept in
    mapcache.py      a vault's graph and live-map data, built once per vault content (and kept on disk)
    pagedata.py      what the live map's page draws: nodes with positions and details, edges, clusters
    topicmap.py      the Map's public names under its old name (`topicmap.build_graph`, …)

reach_matrix.py  memories × connections: who can read what, and why
"""
