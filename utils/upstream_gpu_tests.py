#!/usr/bin/env python3
# Runs upstream MLIR's GPU integration tests (mlir/test/Integration/GPU/CUDA
# and .../Vulkan, copied from the public llvm-project repository into a
# folder outside this one: their text is not part of Hesper) through
# hesper-run on each backend asked for, and prints one line per file and
# backend: PASS, FAIL with the first error line, or SKIP with the reason.
#
#   utils/upstream_gpu_tests.py DIR [--backends vulkan,cpu,cuda]
#       [--hesper-run build/bin/hesper-run] [--filecheck FileCheck|builtin]
#       [--mlir-opt mlir-opt] [--other-mlir a.mlir,b.mlir]
#       [--vendor-specific a.mlir,b.mlir]
#
# Each file runs as an MLIR user would run it with mlir-runner:
# `hesper-run FILE --backend=B [--entry-point-result=R]
# [--shared-libs=libmlir_vulkan_runtime.so]` (R from its RUN lines, where
# they run a runner; the library where they load upstream's Vulkan
# runtime, which hesper-run stands in for and which prints each launch's
# times), its stdout and stderr through FileCheck
# with the file's own CHECK lines when its RUN lines pipe into FileCheck,
# else a zero exit is a pass. A file that MLIR's own parser rejects
# (`--mlir-opt`, default the one on PATH) is of another MLIR version and is
# skipped, and so are the files named by --vendor-specific (those that check
# one vendor's output: PTX text, SASS, ptxas's command line). The summary
# counts passes among the rest.
#
# On a machine without LLVM's tools (the GPU machine of bench/gpu), the
# CHECK lines are matched by a checker of the directives these files use
# (`--filecheck builtin`, the default when no FileCheck is found: CHECK,
# -NEXT, -SAME, -LABEL, -NOT, -DAG, -COUNT-n, {{regex}}, every run of
# blanks in the output and in the patterns' text one space, as FileCheck
# canonicalizes them), and files of another MLIR are named by
# --other-mlir (the list a run with mlir-opt printed).

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

DEFAULT_VENDOR_SPECIFIC = ("dump-ptx.mlir,dump-sass.mlir,command-line-arg.mlir,"
                           "subgroup-reduce-redux.mlir,"
                           "module-to-binary-compiler-log.mlir")


def run_lines(text):
    """The file's RUN lines joined (continuations with a trailing '\\')."""
    lines = [m.group(1) for m in re.finditer(r"//\s*RUN:(.*)$", text, re.M)]
    return " ".join(l.rstrip().rstrip("\\") for l in lines)


def pattern_regex(pattern):
    """A CHECK pattern as a regex: literal text with each run of blanks one
    space (FileCheck's canonical form, the input's too), {{...}} regexes as
    they are."""
    out, at = [], 0
    while at < len(pattern):
        start = pattern.find("{{", at)
        if start < 0:
            start = len(pattern)
        literal = pattern[at:start]
        out.append(re.escape(re.sub(r"[ \t]+", " ", literal)))
        if start == len(pattern):
            break
        end = pattern.find("}}", start + 2)
        if end < 0:
            out.append(re.escape(pattern[start:]))
            break
        out.append("(?:" + pattern[start + 2:end] + ")")
        at = end + 2
    return re.compile("".join(out))


def builtin_check(checks_text, output):
    """Whether `output` satisfies the CHECK lines of `checks_text` (the
    directives upstream's GPU tests use). Returns (ok, why)."""
    directives = []
    for m in re.finditer(r"//\s*CHECK(-[A-Z]+(?:-\d+)?)?:[ \t]?(.*)$",
                         checks_text, re.M):
        kind = (m.group(1) or "")[1:]
        directives.append((kind, m.group(2).strip()))
    if not directives:
        return False, "no CHECK lines"
    lines = [re.sub(r"[ \t]+", " ", l) for l in output.splitlines()]
    line, col = 0, 0          # where the next match may start
    pending_not, dag_floor, dag_used = [], None, set()

    def search(rx, first_line, first_col, single_line=False):
        for i in range(first_line, len(lines)):
            m = rx.search(lines[i], first_col if i == first_line else 0)
            if m:
                return i, m.end()
            if single_line:
                return None
        return None

    def flush_not(until_line):
        for rx, text in pending_not:
            for i in range(line, min(until_line + 1, len(lines))):
                if rx.search(lines[i], col if i == line else 0):
                    return f"CHECK-NOT matched: {text}"
        pending_not.clear()
        return None

    for kind, text in directives:
        rx = pattern_regex(text)
        if kind != "DAG":
            dag_floor = None
        if kind == "NOT":
            pending_not.append((rx, text))
            continue
        count = 1
        if kind.startswith("COUNT-"):
            count = int(kind.split("-")[1])
        for _ in range(count):
            if kind == "NEXT":
                found = (search(rx, line + 1, 0, single_line=True)
                         if line + 1 < len(lines) else None)
            elif kind == "SAME":
                found = search(rx, line, col, single_line=True)
            elif kind == "DAG":
                if dag_floor is None:
                    dag_floor = (line, col)
                found = None
                i = dag_floor[0]
                while i < len(lines):
                    m = rx.search(lines[i], dag_floor[1] if i == dag_floor[0] else 0)
                    if m and (i, m.start()) not in dag_used:
                        found = (i, m.end())
                        dag_used.add((i, m.start()))
                        break
                    i += 1
                if found and (found[0], found[1]) > (line, col):
                    line, col = found
                    continue
            else:
                found = search(rx, line, col)
            if not found:
                return False, f"CHECK{'-' + kind if kind else ''}: {text}"
            why = flush_not(found[0])
            if why:
                return False, why
            if kind != "DAG":
                line, col = found
    why = flush_not(len(lines) - 1)
    return (why is None), why


def first_error(text):
    for line in text.splitlines():
        if re.search(r"error|fail|abort|unsupported|cannot", line, re.I):
            return line.strip()[:220]
    return "output differs from its CHECK lines"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir", help="folder holding the upstream .mlir files "
                    "(searched recursively)")
    ap.add_argument("--backends", default="vulkan,cpu")
    ap.add_argument("--hesper-run", default="build/bin/hesper-run")
    ap.add_argument("--filecheck", default=shutil.which("FileCheck") or
                    ("/usr/lib/llvm-22/bin/FileCheck"
                     if os.path.exists("/usr/lib/llvm-22/bin/FileCheck")
                     else "builtin"))
    ap.add_argument("--mlir-opt", default=shutil.which("mlir-opt") or
                    "/usr/lib/llvm-22/bin/mlir-opt")
    ap.add_argument("--vendor-specific", default=DEFAULT_VENDOR_SPECIFIC)
    ap.add_argument("--other-mlir", default="",
                    help="files of another MLIR version, where no mlir-opt "
                    "can tell")
    ap.add_argument("--timeout", type=int, default=60)
    args = ap.parse_args()

    files = []
    for root, _, names in os.walk(args.dir):
        files += [os.path.join(root, n) for n in names if n.endswith(".mlir")]
    files.sort()
    if not files:
        print(f"error: no .mlir files under {args.dir}", file=sys.stderr)
        return 1
    vendor = set(args.vendor_specific.split(","))
    other = set(filter(None, args.other_mlir.split(",")))
    backends = args.backends.split(",")
    passed = {b: 0 for b in backends}
    runnable = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            name = os.path.relpath(path, args.dir)
            with open(path, encoding="utf-8", errors="replace") as f:
                source = f.read()
            runs = run_lines(source)
            if os.path.basename(path) in vendor:
                print(f"{name}: SKIP (checks one vendor's own output)")
                continue
            if os.path.basename(path) in other:
                print(f"{name}: SKIP (not this MLIR's syntax: --other-mlir)")
                continue
            if os.path.exists(args.mlir_opt):
                parse = subprocess.run([args.mlir_opt, path, "-o",
                                        os.devnull], capture_output=True,
                                       text=True)
                if parse.returncode != 0:
                    print(f"{name}: SKIP (not this MLIR's syntax: "
                          f"{first_error(parse.stderr)})")
                    continue
            runnable += 1
            cmd_tail = []
            if re.search(r"mlir-(cpu-)?runner", runs):
                m = re.search(r"--entry-point-result=(\w+)", runs)
                cmd_tail.append(f"--entry-point-result={m.group(1) if m else 'void'}")
                if "%mlir_vulkan_runtime" in runs:
                    cmd_tail.append("--shared-libs=libmlir_vulkan_runtime.so")
            checks = "FileCheck" in runs
            for backend in backends:
                out_path = os.path.join(tmp, "out.txt")
                cmd = [args.hesper_run, path, f"--backend={backend}",
                       *cmd_tail]
                try:
                    with open(out_path, "w") as out:
                        proc = subprocess.run(cmd, stdout=out,
                                              stderr=subprocess.STDOUT,
                                              timeout=args.timeout)
                    rc = proc.returncode
                except subprocess.TimeoutExpired:
                    print(f"{name} [{backend}]: FAIL (no end after "
                          f"{args.timeout} s)")
                    continue
                with open(out_path, encoding="utf-8",
                          errors="replace") as f:
                    output = f.read()
                if checks and args.filecheck == "builtin":
                    ok, _ = builtin_check(source, output)
                elif checks:
                    fc = subprocess.run([args.filecheck, path,
                                         f"--input-file={out_path}"],
                                        capture_output=True, text=True)
                    ok = fc.returncode == 0
                else:
                    ok = rc == 0
                if ok:
                    passed[backend] += 1
                    print(f"{name} [{backend}]: PASS")
                else:
                    print(f"{name} [{backend}]: FAIL (exit {rc}: "
                          f"{first_error(output)})")
    for backend in backends:
        print(f"{backend}: {passed[backend]} of {runnable} runnable files "
              f"pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
