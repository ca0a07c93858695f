"""``python -m surfbench``: the command line."""

from surfbench.bench.cli.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
