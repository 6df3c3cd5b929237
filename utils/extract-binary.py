#!/usr/bin/env python3
"""Extracts a kernel binary from the gpu.binary objects in MLIR text.

Reads MLIR (a file, or standard input), finds the objects of the requested
format -- `assembly = "..."` (PTX text, from gpu-module-to-binary{format=isa})
or `bin = "..."` (SPIR-V words from hesper-serialize-spirv, or a cubin) --
undoes MLIR's string escapes, and writes the first (or --index N-th) one to
--output (or standard output). Exits 1 with an error if there is none. Used by
the lit tests to hand PTX to ptxas and SPIR-V to spirv-val.
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
    return bytes(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("input", nargs="?", default="-")
    parser.add_argument("--output", "-o", default="-")
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--format", choices=["ptx", "bin"], default="ptx")
    args = parser.parse_args()
    text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    key = "assembly" if args.format == "ptx" else "bin"
    found = re.findall(key + r' = "((?:[^"\\]|\\.)*)"', text)
    if args.index >= len(found):
        print("error: no %s object #%d in the input (found %d)"
              % (args.format, args.index, len(found)), file=sys.stderr)
        return 1
    data = unescape(found[args.index])
    if args.output == "-":
        sys.stdout.buffer.write(data)
    else:
        with open(args.output, "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
