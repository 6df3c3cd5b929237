#!/usr/bin/env python3
"""Checks the per-step losses hesper-train prints with --print-losses.

Reads the lines "step N loss X" of a log and checks, as asked:
  --steps N            there are exactly N of them, for steps 0 .. N-1
  --decrease F         the mean of the last 20 losses is below F times the
                       mean of the first 20 (training made progress)
  --below X            the mean of the last 20 losses is below X
Prints the two means and exits 1 on a failed check.

  check_losses.py run.log --steps 300 --decrease 0.7 --below 3.0
"""

import argparse
import math
import re
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--steps", type=int)
    ap.add_argument("--decrease", type=float)
    ap.add_argument("--below", type=float)
    args = ap.parse_args()
    losses = {}
    with open(args.log) as f:
        for line in f:
            m = re.match(r"step (\d+) loss (\S+)$", line.strip())
            if m:
                losses[int(m.group(1))] = float(m.group(2))
    steps = sorted(losses)
    if not steps:
        print("FAIL: no 'step N loss X' lines")
        return 1
    if args.steps is not None and steps != list(range(args.steps)):
        print("FAIL: expected steps 0..%d, got %d lines from %d to %d"
              % (args.steps - 1, len(steps), steps[0], steps[-1]))
        return 1
    values = [losses[s] for s in steps]
    if any(not math.isfinite(v) for v in values):
        print("FAIL: a loss is not finite")
        return 1
    window = min(20, len(values))
    first = sum(values[:window]) / window
    last = sum(values[-window:]) / window
    print("first %d steps: mean loss %.4f; last %d: %.4f" %
          (window, first, window, last))
    ok = True
    if args.decrease is not None and not last < args.decrease * first:
        print("FAIL: the loss fell to %.3f of its start, not below %.3f"
              % (last / first, args.decrease))
        ok = False
    if args.below is not None and not last < args.below:
        print("FAIL: the final mean loss %.4f is not below %.4f"
              % (last, args.below))
        ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
