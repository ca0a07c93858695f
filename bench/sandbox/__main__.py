"""``python -m surfbench.bench.sandbox``: which isolation mechanisms apply on this machine."""

from surfbench.bench.sandbox.box import describe

print(describe())
