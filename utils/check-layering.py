#!/usr/bin/env python3
"""Checks that Hesper's layers include only the layers below them.

Each source folder belongs to a layer (LAYERS, lowest first; docs/
Architecture.md draws the same table). A file may include headers of its
own layer and of layers below it; the runtime's headers (hesper/runtime/)
only from the execution layer up, and the runtime itself nothing of the
compiler's, nor MLIR or LLVM. The runtime's header-only bottom
(runtime/include/hesper/base/) may be included by every layer and itself
includes nothing but the standard library. Prints one line per violation, as
`path:line: error: ...`, and exits 1 when there is any.

    check-layering.py [ROOT]     (ROOT: the repository, by default the
                                  parent of this script's folder)
"""

import os
import re
import sys

# (layer name, rank, folders holding its sources and headers, the include
# prefixes that name it). Ranks may repeat: layers of one rank are peers
# that must not include each other.
LAYERS = [
    ("support", 0, ["include/Hesper/Support"], ["Hesper/Support/"]),
    ("exp", 1, ["include/Hesper/Dialect/Exp", "lib/Dialect/Exp"],
     ["Hesper/Dialect/Exp/"]),
    ("shaderm", 2, ["include/Hesper/Dialect/ShaderM", "lib/Dialect/ShaderM"],
     ["Hesper/Dialect/ShaderM/"]),
    ("circuit", 3, ["include/Hesper/Dialect/Circuit", "lib/Dialect/Circuit"],
     ["Hesper/Dialect/Circuit/"]),
    ("conversion", 4, ["include/Hesper/Conversion", "lib/Conversion"],
     ["Hesper/Conversion/"]),
    ("interpreter", 4, ["include/Hesper/Interpreter", "lib/Interpreter"],
     ["Hesper/Interpreter/"]),
    ("pipelines", 5, ["include/Hesper/Pipelines", "lib/Pipelines"],
     ["Hesper/Pipelines/"]),
    ("target", 6, ["include/Hesper/Target", "lib/Target"],
     ["Hesper/Target/"]),
    ("registration", 7, ["lib/Registration"],
     ["Hesper/InitAllDialects.h", "Hesper/InitAllPasses.h"]),
    ("execution", 8, ["include/Hesper/Execution", "lib/Execution"],
     ["Hesper/Execution/"]),
    ("models", 9, ["include/Hesper/Models", "lib/Models"],
     ["Hesper/Models/"]),
    ("tuning", 10, ["include/Hesper/Tuning", "lib/Tuning"],
     ["Hesper/Tuning/"]),
    ("serving", 10, ["include/Hesper/Serving", "lib/Serving"],
     ["Hesper/Serving/"]),
    ("tools", 11, ["tools"], []),
]
# The lowest layer that may include the runtime's headers.
RUNTIME_USERS_FROM = 8
RUNTIME_FOLDERS = ["runtime/lib", "runtime/include", "runtime/tools"]
BASE_FOLDER = "runtime/include/hesper/base"

# The files of the libraries that link nothing of the compiler
# (HESPER_COMPILER_FREE in cmake/HesperLayering.cmake) and of hesper-run's
# front end, which links only them, the runtime and LLVM's Support: they
# include no MLIR, of LLVM only ADT and Support, and of Hesper's headers
# only other files of this list (headers by their include path).
COMPILER_FREE = [
    "include/Hesper/Dialect/Circuit/IR/ArgRoleNames.h",
    "include/Hesper/Execution/DeviceSelect.h",
    "lib/Execution/DeviceSelect.cpp",
    "include/Hesper/Models/Chat.h",
    "include/Hesper/Models/Generate.h",
    "include/Hesper/Models/Model.h",
    "include/Hesper/Models/ProgramCache.h",
    "include/Hesper/Models/Sampler.h",
    "include/Hesper/Models/Session.h",
    "include/Hesper/Models/Tokenizer.h",
    "lib/Models/Chat.cpp",
    "lib/Models/Generate.cpp",
    "lib/Models/Model.cpp",
    "lib/Models/ModelArchitectures.cpp",
    "lib/Models/ModelLoader.h",
    "lib/Models/PreTokenizer.cpp",
    "lib/Models/ProgramCache.cpp",
    "lib/Models/Sampler.cpp",
    "lib/Models/Session.cpp",
    "lib/Models/SessionImpl.h",
    "lib/Models/Tokenizer.cpp",
    "lib/Models/TokenizerImpl.h",
    "lib/Models/TokenizerMerge.cpp",
    "lib/Models/Unicode.cpp",
    "lib/Models/Unicode.h",
    "tools/Common/CrashWatchdog.cpp",
    "tools/Common/CrashWatchdog.h",
    "tools/Common/ToolFlags.cpp",
    "tools/Common/ToolFlags.h",
    "tools/hesper-run/BenchMode.cpp",
    "tools/hesper-run/BenchMode.h",
    "tools/hesper-run/DeviceFlags.cpp",
    "tools/hesper-run/DeviceFlags.h",
    "tools/hesper-run/FrontEnd.cpp",
    "tools/hesper-run/ModelMode.cpp",
    "tools/hesper-run/ModelMode.h",
]
LLVM_ALLOWED = ("llvm/ADT/", "llvm/Support/", "llvm/Config/")

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
SOURCES = (".h", ".cpp", ".inc", ".td")


def layer_of_path(rel):
    best = None
    for name, rank, folders, _ in LAYERS:
        for folder in folders:
            if rel == folder or rel.startswith(folder + "/"):
                if best is None or len(folder) > best[2]:
                    best = (name, rank, len(folder))
    return best


def layer_of_include(header):
    for name, rank, _, prefixes in LAYERS:
        for prefix in prefixes:
            if header.startswith(prefix):
                return name, rank
    return None


def includes(path):
    """(line number, header) of each #include of the file at `path`."""
    with open(path, encoding="utf-8", errors="replace") as src:
        for number, line in enumerate(src, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def check_compiler_free(root):
    problems = []
    free = set(COMPILER_FREE)
    for rel in COMPILER_FREE:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        folder = os.path.dirname(rel)
        for number, header in includes(path):
            bad = None
            if header.startswith("mlir/"):
                bad = "MLIR"
            elif header.startswith("llvm/") and not header.startswith(
                    LLVM_ALLOWED):
                bad = "LLVM beyond ADT and Support"
            elif header.startswith("Hesper/"):
                if "include/" + header not in free and not \
                        header.endswith(".inc"):
                    bad = "a header of the compiler"
            elif "/" not in header:
                local = (folder + "/" + header).lstrip("/")
                if os.path.exists(os.path.join(root, local)) and \
                        local not in free and not header.endswith(".inc"):
                    bad = "a header of the compiler"
            if bad:
                problems.append(
                    "%s:%d: error: '%s' links no compiler, but includes '%s' "
                    "(%s)" % (rel, number, rel, header, bad))
    return problems


def check(root):
    problems = check_compiler_free(root)
    for top in ["include", "lib", "tools", "runtime"]:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCES):
                    continue
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                in_runtime = any(rel.startswith(r + "/")
                                 for r in RUNTIME_FOLDERS)
                own = layer_of_path(rel)
                if not in_runtime and own is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as src:
                    for number, line in enumerate(src, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        header = m.group(1)
                        where = "%s:%d: error: " % (rel, number)
                        if rel.startswith(BASE_FOLDER + "/"):
                            if "/" in header and not header.startswith(
                                    "hesper/base/"):
                                problems.append(
                                    where + "hesper/base includes '%s' (it "
                                    "includes nothing but the standard "
                                    "library and itself)" % header)
                            continue
                        if header.startswith("hesper/base/"):
                            continue
                        if in_runtime:
                            if header.startswith(("Hesper/", "mlir/",
                                                  "llvm/")):
                                problems.append(
                                    where + "the runtime includes '%s' (it "
                                    "links no compiler, MLIR or LLVM)" % header)
                            continue
                        name, rank, _ = own
                        if header.startswith("hesper/runtime/"):
                            if rank < RUNTIME_USERS_FROM:
                                problems.append(
                                    where + "layer '%s' includes the runtime "
                                    "('%s'); only execution and above may" %
                                    (name, header))
                            continue
                        target = layer_of_include(header)
                        if target is None:
                            continue
                        tname, trank = target
                        if trank > rank or (trank == rank and tname != name):
                            problems.append(
                                where + "layer '%s' includes '%s' of layer "
                                "'%s', which is %s" %
                                (name, header, tname,
                                 "above it" if trank > rank else "a peer"))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p)
    print("layering: %d violation%s" % (len(problems),
                                         "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
