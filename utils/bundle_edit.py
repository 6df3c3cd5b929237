#!/usr/bin/env python3
# ===- bundle_edit.py - Change a Hesper bundle file, for tests ------------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Writes a changed copy of a bundle (runtime/lib/program/Program.cpp:
# version 3 on ends with a u64 FNV-1a checksum of every byte before it;
# the field edits read version 7):
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
#   bundle_edit.py IN OUT --buffer-bytes I N  set buffer I's size to N
#   bundle_edit.py IN OUT --swap-bindings L A B
#                                             swap the buffers of bindings A
#                                             and B of launch L
#   bundle_edit.py IN OUT --grid L X          set launch L's grid x to X
#       These write a matching checksum: they model a bundle whose fields
#       disagree with its kernels' ABI, which loading must refuse.
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


class Layout:
    """Offsets of the fields of a version-7 bundle body."""

    def __init__(self, body):
        self.body, self.at = body, 8 + 4
        self.string()  # name
        self.at += 4  # backend
        for _ in range(self.u64()):
            self.string()  # a kernel binary
        for _ in range(self.u64()):
            self.string()  # name
            self.at += 4  # binary index
            self.string()  # format
            # bindings, push constant bytes, workgroup size x/y/z, shared
            # memory bytes, host threads
            self.at += 7 * 4
            sizes = self.u64()
            self.at += 8 * sizes  # binding sizes
            self.string()  # read-only flags
            self.at += 3 * 4  # largest grid
        self.buffer_bytes = []
        for _ in range(self.u64()):
            self.string()
            self.buffer_bytes.append(self.at)
            self.at += 8
        self.at += 4  # arguments
        self.launch_bindings, self.launch_grid = [], []
        for _ in range(self.u64()):
            self.at += 4  # kernel
            m = self.u64()
            self.launch_bindings.append([self.at + 4 * j for j in range(m)])
            self.launch_grid.append(self.at + 4 * m)
            self.at += 4 * m + 12

    def u64(self):
        (v,) = struct.unpack_from("<Q", self.body, self.at)
        self.at += 8
        return v

    def string(self):
        length = self.u64()
        self.at += length


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--replace", nargs=2, metavar=("OLD", "NEW"))
    ap.add_argument("--flip")
    ap.add_argument("--rechecksum", action="store_true")
    ap.add_argument("--buffer-bytes", nargs=2, type=int)
    ap.add_argument("--swap-bindings", nargs=3, type=int)
    ap.add_argument("--grid", nargs=2, type=int)
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
    elif args.buffer_bytes or args.swap_bindings or args.grid:
        b = bytearray(body)
        layout = Layout(body)
        if args.buffer_bytes:
            index, value = args.buffer_bytes
            struct.pack_into("<Q", b, layout.buffer_bytes[index], value)
        elif args.grid:
            launch, x = args.grid
            struct.pack_into("<I", b, layout.launch_grid[launch], x)
        else:
            launch, x, y = args.swap_bindings
            at = layout.launch_bindings[launch]
            bx, by = b[at[x]:at[x] + 4], b[at[y]:at[y] + 4]
            b[at[x]:at[x] + 4], b[at[y]:at[y] + 4] = by, bx
        body = bytes(b)
        checksum = struct.pack("<Q", fnv1a(body))
    else:
        sys.exit("error: give --replace, --flip, --buffer-bytes, "
                 "--swap-bindings or --grid")
    open(args.output, "wb").write(body + checksum)


if __name__ == "__main__":
    main()
