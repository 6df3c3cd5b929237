//===- ModelMode.h - hesper-run on a GGUF model -----------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TOOLS_HESPER_RUN_MODELMODE_H
#define HESPER_TOOLS_HESPER_RUN_MODELMODE_H

#include "Hesper/Execution/DeviceSelect.h"
#include "Hesper/Models/Session.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>

namespace hesper::run {

/// The model file named by -m, or the positional argument when it is a GGUF
/// file (by extension or magic); "" when hesper-run is not in model mode.
std::string modelPath(const std::string &positional);

/// What model mode asks of the binary it runs in (ModelMode.cpp needs no
/// compiler; the compiler tool passes its own, the front end its
/// cache-only ones).
struct ModelModeHooks {
  /// Opens the session (Session::create where the compiler is linked).
  std::function<rt::Result<std::unique_ptr<models::Session>>(
      const models::Model &, rt::Device *, const models::SessionOptions &)>
      openSession;
  /// --emit-mlir: writes the model's graphs for a context, a chunk size and
  /// the graph options (KV cache types, quantized activations) to a file;
  /// returns the exit status.
  std::function<int(const models::Model &, int64_t context, int64_t chunk,
                    const models::GraphOptions &options,
                    const std::string &path)>
      emitGraphs;
};

/// Loads the model, opens a session on the device the options ask for (the
/// interpreter when `interpreter`), and generates text with llama.cpp-style
/// flags. Returns the process exit status.
int runModelMode(const std::string &path, const exec::DeviceModeOptions &opts,
                 bool interpreter, const ModelModeHooks &hooks);

/// Whether the model-mode flags ask for what only the compiler does:
/// --emit-mlir, --no-cache.
bool modelModeNeedsCompiler();

/// Whether --cache-info was given; printCacheInfo prints what it shows.
bool cacheInfoAsked();
int printCacheInfo(llvm::raw_ostream &os);

} // namespace hesper::run

#endif // HESPER_TOOLS_HESPER_RUN_MODELMODE_H
