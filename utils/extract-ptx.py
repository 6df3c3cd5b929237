#!/usr/bin/env python3
"""Extracts the PTX text of every gpu.binary object in MLIR text.

Reads MLIR (a file, or standard input) in which gpu-module-to-binary{format=isa}
left `assembly = "..."` objects, undoes MLIR's string escapes, and writes the
first (or --index N-th) assembly to --output (or standard output). Exits 1 with
an error if there is none. Used by the lit tests to hand PTX to ptxas.
"""

import argparse
import re
import sys


def unescape(text):
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "\\\"":
                out += nxt.encode()
                i += 2
                continue
            if nxt == "n":
                out += b"\n"
                i += 2
                continue
            if nxt == "t":
                out += b"\t"
                i += 2
                continue
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
            continue
        out += c.encode()
        i += 1
    return out.decode()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("input", nargs="?", default="-")
    parser.add_argument("--output", "-o", default="-")
    parser.add_argument("--index", type=int, default=0)
    args = parser.parse_args()
    text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    found = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', text)
    if args.index >= len(found):
        print("error: no PTX assembly #%d in the input (found %d)"
              % (args.index, len(found)), file=sys.stderr)
        return 1
    ptx = unescape(found[args.index])
    if args.output == "-":
        sys.stdout.write(ptx)
    else:
        with open(args.output, "w") as f:
            f.write(ptx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
