"""The server-benchmark room: the pure parts of the local server's benchmarks and checks, tested without a model.

A feature room (tests/test_layers.py, ``ROOMS``): one feature in one package, built on the core stages it needs;
no core stage imports it, and ``scripts/bench_*.py`` and the tests do. The batching benchmark's settings,
outcome identity and rows (``batching``, for ``scripts/bench_batching.py``), and the single-slot cache model
checked against llama-server's own per-request cache counts (``slot_check``), from a local run's requests
rebuilt as exact token ids (``slot_tokens``), replayed through the prompt-cache room's model (bench.promptcache,
the one other room it imports: tests/test_layers.py, ``ROOM_IMPORTS``). What a user's report shows stays out of
this room.
"""
