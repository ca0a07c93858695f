"""The synthesis room: verified tasks from a suite's own catalog and world (``surfbench synth``, docs/suites.md).

A feature room (tests/test_layers.py, ``ROOMS``): one feature in one package, built on the core stages it needs
and imported only by the front ends (bench/cli/). The templates a suite ships (``synth_spec``), the world its
arguments are drawn from (``synth_world``), candidate tasks (``synth_build``), the checks a kept task gets
(``synth_checks``), each candidate verified through the real loop and scorer (``synth_verify``), the engine
(``synth_run``), the command (``synth_cli``), and synthesized twins of hand-written tasks (``synth_twins``).
"""
