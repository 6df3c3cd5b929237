//===- DeviceFlags.h - hesper-run's device flags ----------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The flags that pick hesper-run's device (--backend, --device, --threads,
// --validation), shared by its two binaries: the front end (hesper-run in
// bin/, no compiler) and the compiler tool it hands over to
// (libexec/hesper/hesper-run-compiler), so that both read a command line
// the same way.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TOOLS_HESPER_RUN_DEVICEFLAGS_H
#define HESPER_TOOLS_HESPER_RUN_DEVICEFLAGS_H

#include "Hesper/Execution/DeviceSelect.h"

#include "llvm/Support/CommandLine.h"

namespace hesper::run {

/// The category of device, target and bundle flags in --help.
llvm::cl::OptionCategory &deviceCategory();

/// --backend=interp: the reference interpreter.
bool interpreterChosen();
/// A backend named on the command line (not auto).
bool backendNamed();
/// --device given (its value is deviceFlags().deviceIndex).
bool deviceIndexGiven();

/// The device options the flags give: backend, device index, CPU threads,
/// validation (also HESPER_VK_VALIDATION=1).
exec::DeviceModeOptions deviceFlags();

} // namespace hesper::run

#endif // HESPER_TOOLS_HESPER_RUN_DEVICEFLAGS_H
