"""Copies a hesper-train checkpoint (a GGUF file) with its
hesper.train.step metadata value replaced (train-errors.test)."""
import struct
import sys

source, target, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(source, "rb").read())
key = b"hesper.train.step"
# The key is stored as a u64 length and its bytes, then the value's type.
at = data.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
(kind,) = struct.unpack_from("<I", data, at)
formats = {4: "<I", 5: "<i", 10: "<Q", 11: "<q"}
if kind not in formats:
    sys.exit("hesper.train.step has GGUF type %d, not an integer" % kind)
struct.pack_into(formats[kind], data, at + 4, step)
open(target, "wb").write(bytes(data))
