#!/usr/bin/env python3
"""Summarises an Nsight Compute CSV of gpu__time_duration (scripts/gpu_profile.sh): device time per kernel
(name, grid, block), largest first, with its share of the total, launch count and mean. Usage:
ncu_summary.py FILE.csv [TOP]"""
import csv
import sys
from collections import defaultdict


def rows_of(path):
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("==")]
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        sys.exit(f"{path}: no ncu CSV header")
    return csv.DictReader(lines[start:])


def main():
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30
    total = defaultdict(float)
    count = defaultdict(int)
    for row in rows_of(path):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = row.get("Metric Unit", "ns")
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(unit, 1e-3)
        name = row["Kernel Name"].split("(")[0][:70]
        key = (name, row.get("Grid Size", ""), row.get("Block Size", ""))
        total[key] += value * scale
        count[key] += 1
    grand = sum(total.values())
    print(f"{path}: {sum(count.values())} launches, {grand / 1e3:.2f} ms of kernel time")
    print(f"{'us total':>10} {'share':>6} {'count':>6} {'us mean':>9}  kernel  grid  block")
    for key, us in sorted(total.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{us:10.1f} {100 * us / grand:5.1f}% {count[key]:6d} {us / count[key]:9.2f}  {key[0]}  {key[1]}  {key[2]}")


if __name__ == "__main__":
    main()
