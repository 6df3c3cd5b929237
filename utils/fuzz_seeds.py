#!/usr/bin/env python3
# ===- fuzz_seeds.py - Seed corpora for the fuzz harnesses -------------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
#   fuzz_seeds.py CORPUS_DIR BIN_DIR
#
# Writes CORPUS_DIR/{mlir,npy,bundle,gguf,tokenizer,json}/ from the test suite:
# every .mlir test split at `// -----`, .npy files of each dtype, bundles
# hesper-run (BIN_DIR) compiles for the CPU, Vulkan and CUDA targets, small
# GGUF models of each architecture and tensor type (utils/gguf), and a few
# tokenizer vocabularies, the JSON reports and plans of the tests. Run by
# `make fuzz`.
#
# ===----------------------------------------------------------------------=== #

import os
import pathlib
import struct
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def npy(descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape) if len(shape) != 1 else
        "%d," % shape[0])
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
            header.encode() + data)


def main():
    corpus, bins = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    # .mlir: each split of each test file.
    count = 0
    for path in sorted((ROOT / "test").rglob("*.mlir")):
        for k, part in enumerate(path.read_text().split("// -----")):
            data = part.encode()
            if len(data) <= 65536:
                write(corpus / "mlir" / f"{path.stem}-{k}.mlir", data)
                count += 1
    # .npy of each dtype and a few shapes.
    write(corpus / "npy" / "f32.npy", npy("<f4", (2, 3), b"\0" * 24))
    write(corpus / "npy" / "f16.npy", npy("<f2", (4,), b"\0" * 8))
    write(corpus / "npy" / "i32.npy", npy("<i4", (2, 2, 2), b"\1" * 32))
    write(corpus / "npy" / "u8.npy", npy("|u1", (5,), b"abcde"))
    write(corpus / "npy" / "scalar.npy", npy("<f4", (), b"\0" * 4))
    # Bundles for each target.
    graphs = [ROOT / "test/Tools/Inputs/scale.mlir",
              ROOT / "test/Integration/Interp/case04-rmsnorm.mlir"]
    for graph in graphs:
        for target in ["cpu", "vulkan:8", "cuda:sm_80"]:
            out = corpus / "bundle" / f"{graph.stem}-{target.replace(':', '_')}.hb"
            out.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([str(bins / "hesper-run"), str(graph),
                            f"--target={target}", "--save-bundle", str(out)],
                           check=True, stdout=subprocess.DEVNULL)
    # GGUF models: every architecture, tokenizer and tensor type, tiny.
    make = ROOT / "utils/gguf/make_model.py"
    for arch, tok, ttype in [("llama", "llama", "f32"), ("qwen2", "gpt2", "q8_0"),
                             ("qwen3", "gpt2", "q4_k"), ("llama", "llama", "q6_k"),
                             ("llama", "llama", "q5_k"), ("llama", "llama", "q4_0"),
                             ("llama", "gpt2", "f16")]:
        out = corpus / "gguf" / f"{arch}-{tok}-{ttype}.gguf"
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(make), str(out), "--arch", arch,
                        "--tokenizer", tok, "--type", ttype, "--dim", "256",
                        "--layers", "1", "--heads", "2", "--kv-heads", "1",
                        "--ffn", "256", "--vocab", "300", "--quiet"],
                       check=True)
    # Tokenizer inputs: mode byte, tokens (gpt2: '@' merges), empty line, text.
    write(corpus / "tokenizer" / "llama",
          b"\x0a<s>\n</s>\n\xe2\x96\x81a\n\xe2\x96\x81b\na\nb\n<0x41>\n\n a b ab")
    write(corpus / "tokenizer" / "gpt2",
          b"\x03<|bos|>\n\xc4\xa0\na\nb\nab\n@a b\n\nab a\xc4\xa0b")
    # JSON: the eval reports and plans of the tests, and a plan
    # hesper-run writes (--emit-plan).
    json_count = 0
    for path in sorted((ROOT / "test").rglob("*.json")):
        write(corpus / "json" / path.name, path.read_bytes())
        json_count += 1
    plan = corpus / "json" / "scale-plan.json"
    subprocess.run([str(bins / "hesper-run"), str(graphs[0]), "--backend=cpu",
                    "--emit-plan", str(plan)], check=True,
                   stdout=subprocess.DEVNULL)
    json_count += 1
    print(f"fuzz seeds: {count} .mlir splits, 5 .npy, {len(graphs) * 3} "
          f"bundles, 7 GGUF models, 2 tokenizer inputs, {json_count} JSON "
          f"files in {corpus}")


if __name__ == "__main__":
    main()
