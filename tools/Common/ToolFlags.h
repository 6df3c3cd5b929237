//===- ToolFlags.h - Command-line pieces the tools share --------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What hesper-run, hesper-train, hesper-tune and hesper-eval share on their
// command lines: the --backend flag and how it opens a device, the help
// filter, and --list-devices. The libraries below take typed options
// (exec::DeviceModeOptions, rt::Backend) and parse no flags.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TOOLS_COMMON_TOOLFLAGS_H
#define HESPER_TOOLS_COMMON_TOOLFLAGS_H

#include "Hesper/Execution/DeviceSelect.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hesper::tools {

/// The --backend choices of hesper-train, hesper-tune and hesper-eval
/// (hesper-run adds the interpreter).
enum class BackendFlag { Auto, Vulkan, Cuda, Cpu };
/// The values of a `cl::opt<BackendFlag>`: auto, vulkan, cuda, cpu.
llvm::cl::ValuesClass backendFlagValues();
/// The backend a flag names; nullopt for auto (openRequestedDevice's order).
std::optional<rt::Backend> backendOf(BackendFlag flag);
/// openRequestedDevice for a --backend flag and --device index (and the
/// CPU backend's threads, Vulkan's validation layers).
std::unique_ptr<rt::Device> openFlaggedDevice(BackendFlag flag,
                                              int deviceIndex,
                                              unsigned threads = 0,
                                              bool validation = false);

/// Hides every registered option outside the categories named in `shown`
/// and LLVM's "Generic Options" (--help, --version) from --help: LLVM's
/// own hundreds of options; --help-hidden still lists them.
void hideOptionsOutside(llvm::ArrayRef<llvm::StringRef> shown);

/// Prints the devices of every backend (`--list-devices`).
void listAllDevices(llvm::raw_ostream &os);

/// Rewrites --threads/-threads/-t (with `=` or a separate value) to
/// --cpu-threads in argv, before parsing: libLLVM registers an option named
/// "threads" for itself. `storage` keeps the new strings.
void renameThreadsFlag(int argc, char **argv,
                       std::vector<std::string> &storage);

} // namespace hesper::tools

#endif // HESPER_TOOLS_COMMON_TOOLFLAGS_H
