//===- ModelMode.h - hesper-run on a GGUF model -----------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TOOLS_HESPER_RUN_MODELMODE_H
#define HESPER_TOOLS_HESPER_RUN_MODELMODE_H

#include "Hesper/Execution/GraphRun.h"

namespace hesper::run {

/// The model file named by -m, or the positional argument when it is a GGUF
/// file (by extension or magic); "" when hesper-run is not in model mode.
std::string modelPath(const std::string &positional);

/// Loads the model, opens a session on the device the options ask for (the
/// interpreter when `interpreter`), and generates text with llama.cpp-style
/// flags. Returns the process exit status.
int runModelMode(const std::string &path, const exec::DeviceModeOptions &opts,
                 bool interpreter);

/// Whether --cache-info was given; printCacheInfo prints what it shows.
bool cacheInfoAsked();
int printCacheInfo(llvm::raw_ostream &os);

} // namespace hesper::run

#endif // HESPER_TOOLS_HESPER_RUN_MODELMODE_H
