"""The authoring room: writing and checking a suite (``surfbench init``, ``surfbench check``, docs/suites.md).

A feature room (tests/test_layers.py, ``ROOMS``): one feature in one package, built on the core stages it needs
and imported only by the front ends (bench/cli/). A code-free suite for any catalog, the oracle's replay of a
suite's tasks and the checks ``check`` runs (``scaffold``), a suite over a live MCP server (``scaffold_mcp``),
where that server finds its data (``scaffold_data``: a copy in the suite unless told otherwise), the pre-selection
and search ``check`` chooses on an init'd suite's own tasks (``scaffold_retrieval``), and the two commands
(``authoring_cli``), given the front ends' live-server options (bench/cli/mcp.py).
"""
