"""The sequential room: gates decided pair by pair with an always-valid test, and runs that stop once decided.

A feature room (tests/test_layers.py, ``ROOMS``): one feature in one package, built on the core stages it needs
and imported only by the front ends (bench/cli/). The test (``sequential``: a betting confidence sequence), the
task pairs it reads from stored episodes (``sequential_pairs``), ``surfbench gate --sequential``
(``sequential_gate``, its command line in ``sequential_cli``, with ``surfbench plan``'s sequential estimate), and
``surfbench run ... until_decided=GATE`` (``until_decided``). A criterion's ``sequential:`` flag and its
threshold's check stay with the criteria files (bench.report.gate_criteria), which the fixed-N gate reads too.
"""
