#!/usr/bin/env python3
# ===- bundle_edit.py - Change a Hesper bundle file, for tests ------------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Writes a changed copy of a bundle (runtime/lib/Program.cpp: version 3 ends
# with a u64 FNV-1a checksum of every byte before it):
#
#   bundle_edit.py IN OUT --replace OLD NEW   replace the one occurrence of
#                                             OLD by NEW (same length) and
#                                             write a matching checksum, as
#                                             a compiler could have
#   bundle_edit.py IN OUT --flip OFFSET       flip the low bit of the byte at
#                                             OFFSET (negative: from the
#                                             end of the body), checksum kept
#       OFFSET may be spirv+N: N bytes after the first SPIR-V magic number.
#       With --rechecksum the checksum is rewritten to match, so that the
#       change reaches the checks after the checksum (the SPIR-V validator).
#
# ===----------------------------------------------------------------------=== #

import argparse
import struct
import sys


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--replace", nargs=2, metavar=("OLD", "NEW"))
    ap.add_argument("--flip")
    ap.add_argument("--rechecksum", action="store_true")
    args = ap.parse_args()
    data = open(args.input, "rb").read()
    body, checksum = data[:-8], data[-8:]
    if args.replace:
        old, new = (s.encode() for s in args.replace)
        if len(old) != len(new) or body.count(old) != 1:
            sys.exit("error: OLD must occur once and be as long as NEW")
        body = body.replace(old, new)
        checksum = struct.pack("<Q", fnv1a(body))
    elif args.flip is not None:
        b = bytearray(body)
        if args.flip.startswith("spirv+"):
            magic = body.find(struct.pack("<I", 0x07230203))
            if magic < 0:
                sys.exit("error: the bundle has no SPIR-V module")
            offset = magic + int(args.flip[len("spirv+"):])
        else:
            offset = int(args.flip)
        b[offset] ^= 1
        body = bytes(b)
        if args.rechecksum:
            checksum = struct.pack("<Q", fnv1a(body))
    else:
        sys.exit("error: give --replace or --flip")
    open(args.output, "wb").write(body + checksum)


if __name__ == "__main__":
    main()
