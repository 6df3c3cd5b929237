# -*- Python -*-
# lit configuration for Hesper's FileCheck tests.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "Hesper"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hesper_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))

# FileCheck, not, count and split-file live in the LLVM tools directory;
# Hesper's tools in the build's bin directory.
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.hesper_tools_dir, append_path=True)
llvm_config.use_default_substitutions()

tools = ["hesper-opt", "hesper-run", "hesper-bundle-run", "hesper-train",
         "hesper-tune", "hesper-eval", "hesper-server"]
llvm_config.add_tool_substitutions(tools, [config.hesper_tools_dir])
# The endurance benchmark (bench/), absent where the benchmarks are not
# built (the sanitizer build: AddressSanitizer's quarantine grows the
# resident set by design).
if os.path.exists(os.path.join(config.hesper_tools_dir,
                               "hesper-bench-endurance")):
    config.available_features.add("endurance-bench")

# A Vulkan device (lavapipe counts) for test/Integration/Vulkan, found the
# way users find it: `hesper-run --list-devices`.
import subprocess
try:
    devices = subprocess.run(
        [os.path.join(config.hesper_tools_dir, "hesper-run"), "--list-devices"],
        capture_output=True, text=True, timeout=60).stdout
except (OSError, subprocess.TimeoutExpired):
    devices = ""
if "vulkan 0:" in devices:
    config.available_features.add("vulkan")
if "cuda 0:" in devices:
    config.available_features.add("cuda")
# A GPU that `--backend=auto` prefers to the CPU target: a CUDA device or a
# Vulkan device that is not a CPU (lavapipe is one).
import re
if "cuda 0:" in devices or any(
        re.search(r"\((\w+), subgroup \d+, shared memory \d+ bytes\)$", line)
        and not re.search(r"\(cpu, subgroup", line)
        for line in devices.splitlines() if line.startswith("vulkan ")):
    config.available_features.add("gpu")
# No node that a GPU's driver opens (DRM render nodes, NVIDIA's, WSL's
# /dev/dxg): there `--backend=auto` does not load the Vulkan drivers.
import glob
if not glob.glob("/dev/dri/renderD*") and not any(
        os.path.exists(n) for n in ["/dev/nvidiactl", "/dev/nvidia0",
                                    "/dev/dxg"]):
    config.available_features.add("no-gpu-nodes")
# The native CPU target needs the CPU driver and a C compiler driver (cc)
# to link its kernels.
if "cpu 0:" in devices and shutil.which("cc"):
    config.available_features.add("cpu-target")
    # vpdpbusd on 256-bit vectors (AVX512-VNNI with AVX512-VL, or AVX-VNNI):
    # the native code's byte dot products use it.
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = set(next((l for l in cpuinfo if l.startswith("flags")),
                             "").split())
    except OSError:
        flags = set()
    if {"avx512_vnni", "avx512vl"} <= flags or "avx_vnni" in flags:
        config.available_features.add("cpu-vnni")
# Validation-layer messages fail the Vulkan tests (hesper-run --validation).
# The loader's driver choice passes through: VK_ICD_FILENAMES=/nonexistent
# runs the suite as on a machine without Vulkan.
# NPY_PROMOTION_STATE=weak runs the NumPy reference under NumPy 2's
# promotion rules on NumPy 1.24.
for var in ["VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_LAYER_PATH",
            "HESPER_CACHE_DIR",
            "HESPER_VULKAN_KEEP_DRIVERS_LOADED", "NPY_PROMOTION_STATE"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Model programs are cached (docs/Models.md, "Program cache") under the
# build's test folder, not the user's home; tests of the cache itself
# name their own folder with HESPER_CACHE_DIR.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.test_exec_root,
                                                    "xdg-cache")

# Optional external validators: tests that need them say REQUIRES.
if shutil.which("spirv-val"):
    config.available_features.add("spirv-val")
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas"
    if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# CUDA's libdevice, which the NVVM target links for math functions.
libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
if os.path.exists(libdevice):
    config.available_features.add("libdevice")
    config.substitutions.append(("%libdevice", libdevice))

# Pull the PTX text or the SPIR-V words out of gpu.binary objects, for
# ptxas and spirv-val.
extract = "python3 " + os.path.join(os.path.dirname(config.test_source_root),
                                    "utils", "extract-binary.py")
config.substitutions.append(("%extract_ptx", extract + " --format=ptx"))
config.substitutions.append(("%extract_spirv", extract + " --format=bin"))
# The runner of upstream MLIR's GPU tests.
config.substitutions.append(
    ("%upstream_gpu_tests",
     "python3 " + os.path.join(os.path.dirname(config.test_source_root),
                               "utils", "upstream_gpu_tests.py")))

# The model tests generate GGUF files and compare with an independent NumPy
# reference (utils/gguf); they need a Python that has NumPy (Debian's
# python3-numpy, for /usr/bin/python3).
gguf_tools = os.path.join(os.path.dirname(config.test_source_root), "utils",
                          "gguf")
for candidate in ["/usr/bin/python3", shutil.which("python3")]:
    if not candidate:
        continue
    try:
        ok = subprocess.run([candidate, "-c", "import numpy"],
                            capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if ok:
        config.available_features.add("numpy")
        config.substitutions.append(("%numpy_python", candidate))
        break
config.substitutions.append(("%gguf_tools", gguf_tools))
# hesper-run's path, for scripts that run it themselves.
config.substitutions.append(
    ("%hesper_run", os.path.join(config.hesper_tools_dir, "hesper-run")))

# mlir-runner (Debian's mlir-22-tools), for tests that run lowered host code
# through upstream's runner rather than hesper-run.
if os.path.exists(os.path.join(config.llvm_tools_dir, "mlir-runner")):
    config.available_features.add("mlir-runner")

# MLIR's runner utilities (printMemrefF32, ...), for gpu dialect programs'
# --shared-libs, named as mlir-runner's own tests name them.
for name in ["mlir_runner_utils", "mlir_c_runner_utils"]:
    path = os.path.join(config.mlir_lib_dir, "lib" + name + ".so")
    if os.path.exists(path):
        config.substitutions.append(("%" + name, path))

# hesper-server's tests drive it with the official OpenAI client and a
# headless Debian chromium (puppeteer-core), npm packages that `make test`
# installs into the build folder (test/Server/package.json).
npm_dir = os.path.join(config.hesper_obj_root, "test-npm")
config.environment["HESPER_NPM_DIR"] = npm_dir
if shutil.which("node") and os.path.exists(
        os.path.join(npm_dir, "node_modules", "openai")):
    config.available_features.add("npm-clients")
for browser in ["/usr/bin/chromium", shutil.which("chromium")]:
    if browser and os.path.exists(browser):
        config.available_features.add("chromium")
        config.environment["HESPER_CHROMIUM"] = browser
        break

# The Python module (build/python/hesper), for test/Python: importable by
# the NumPy Python with pytest (not in the sanitizer build: an instrumented
# extension needs the sanitizer runtime preloaded into python).
hesper_python = os.path.join(config.hesper_obj_root, "python")
config.substitutions.append(("%hesper_python", hesper_python))
for candidate in ["/usr/bin/python3", shutil.which("python3")]:
    if not candidate:
        continue
    try:
        ok = subprocess.run(
            [candidate, "-c", "import hesper, numpy, pytest"],
            env={**os.environ, "PYTHONPATH": hesper_python},
            capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if ok:
        config.available_features.add("python-module")
        break
