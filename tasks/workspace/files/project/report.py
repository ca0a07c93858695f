"""Print total units per region from data/sales.csv."""

import csv
from collections import defaultdict

totals = defaultdict(int)
with open("data/sales.csv") as fh:
    for row in csv.DictReader(fh):
        totals[row["region"]] += int(row["units"])
for region in sorted(totals):
    print(region, totals[region])
