//===- DeviceSelect.h - Which device a tool runs on -------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The device options the tools share (the --backend, --device, --threads
// flags as values), opening the device they name, and the Chrome traces
// the tools write. No MLIR: hesper-run's model front end links this
// without the compiler (docs/Models.md, "Starting without the compiler").
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_EXECUTION_DEVICESELECT_H
#define HESPER_EXECUTION_DEVICESELECT_H

#include "hesper/runtime/Runtime.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <memory>
#include <optional>
#include <string>

namespace hesper::exec {

struct DeviceModeOptions {
  std::optional<rt::Backend> backend; ///< nullopt: auto (GPU, CPU, lavapipe)
  int deviceIndex = -1;
  unsigned threads = 0; ///< CPU backend threads (0: the cores available)
  bool validation = false;
  unsigned repeat = 1;
  unsigned determinismRuns = 0; ///< rerun from the same inputs and compare
  bool check = false;           ///< compare with the reference interpreter
  bool fuse = true;
  bool printResults = false;
  bool quiet = false;
  std::string profilePath;
  std::string dumpDir;
  std::string saveBundlePath;
  std::string planPath; ///< a tuning plan to compile with (CompileOptions)
  /// --matrix-units, when given (CompileOptions::matrixUnits; a model's
  /// session chooses for itself when not).
  std::optional<bool> matrixUnits;
};

/// A Chrome trace (chrome://tracing, Perfetto) of complete events: compile
/// stages, steps and kernels, each on its own track (`tid`).
class ChromeTrace {
public:
  void add(llvm::StringRef name, llvm::StringRef category, double startUs,
           double durUs, int tid);
  /// Writes the trace as JSON; false when `path` cannot be written.
  bool write(const std::string &path);

private:
  llvm::json::Array events;
};

/// Opens the device the options ask for: the named backend's (on failure
/// prints `error: ...` and returns null), or for auto a GPU (CUDA, then a
/// Vulkan device that is not a CPU), else the CPU target, else a Vulkan
/// CPU device such as lavapipe (null, silently, when none opens: the caller
/// falls back to the interpreter). Vulkan's drivers are loaded before the
/// CPU target only where a GPU's device node exists (/dev/dri/renderD*,
/// NVIDIA's, /dev/dxg).
std::unique_ptr<rt::Device> openRequestedDevice(const DeviceModeOptions &opts);
} // namespace hesper::exec

#endif // HESPER_EXECUTION_DEVICESELECT_H
