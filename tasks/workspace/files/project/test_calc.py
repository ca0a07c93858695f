"""Run with: python3 project/test_calc.py"""

import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])

from calc import add, clamp, greet, mean  # noqa: E402

failures = 0
for label, got, want in [
    ("add", add(2, 3), 5),
    ("mean", mean([2, 4, 6]), 4),
    ("clamp", clamp(15, 0, 10), 10),
    ("greet", greet("Ana"), "Hello, Ana!"),
]:
    if got != want:
        failures += 1
        print(f"FAIL {label}: got {got!r}, want {want!r}")
    else:
        print(f"ok   {label}")
print("all passed" if not failures else f"{failures} failed")
sys.exit(1 if failures else 0)
