//===- FrontEnd.cpp - hesper-run without the compiler ---------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The `hesper-run` users start. Most starts of a model need no compiler:
// its programs are in the program cache, and loading them takes
// milliseconds, while loading the compiler (libLLVM, MLIR: ~60 ms and
// ~55 MiB resident before any work) costs more than the whole rest of the
// start. So this binary links the runtime and the models' running half
// only (HesperModelRuntime, the static LLVM Support library), runs a GGUF
// model whose programs the cache holds, and hands every other command line
// to the compiler tool, libexec/hesper/hesper-run-compiler beside this
// binary's folder, by exec with the same arguments (argv[0] too, so that
// its messages name the command the user typed): program and graph files, a
// cache miss, the interpreter, --emit-mlir, --no-cache, --help and any
// flag this binary does not know. Both binaries parse the model and device
// flags with the same code (ModelMode.cpp, DeviceFlags.cpp), so a command
// line means the same in either.
//
//===----------------------------------------------------------------------===//

#include "CrashWatchdog.h"
#include "DeviceFlags.h"
#include "ModelMode.h"
#include "ToolFlags.h"

#include "Hesper/Models/ProgramCache.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

using namespace hesper;

static llvm::cl::opt<std::string>
    inputFilename(llvm::cl::Positional, llvm::cl::desc("[model.gguf]"),
                  llvm::cl::init(""));

/// The compiler tool: libexec/hesper/hesper-run-compiler next to this
/// binary's folder (bin/). "" when /proc/self/exe cannot be read.
static std::string compilerToolPath() {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return "";
  self[n] = 0;
  llvm::StringRef bin = llvm::StringRef(self).rsplit('/').first;
  llvm::StringRef prefix = bin.rsplit('/').first;
  return (prefix + "/libexec/hesper/hesper-run-compiler").str();
}

/// Replaces this process with the compiler tool on the original command
/// line. Returns only when that fails (the exit status, after the error).
static int runCompilerTool(const std::vector<char *> &argv) {
  llvm::outs().flush();
  llvm::errs().flush();
  std::string tool = compilerToolPath();
  if (!tool.empty())
    ::execv(tool.c_str(), argv.data());
  llvm::errs() << "error: hesper-run cannot start its compiler ("
               << (tool.empty() ? std::string("/proc/self/exe is unreadable")
                                : tool + ": " + std::strerror(errno))
               << ")\n";
  return 1;
}

/// Command lines handed over before parsing: LLVM's --help and --version
/// print and exit while parsing, and the compiler tool's say more; a dump
/// folder in the environment asks for a compile.
static bool compilerToolAskedFor(int argc, char **argv) {
  if (const char *dump = std::getenv("HESPER_DUMP_DIR"); dump && *dump)
    return true;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "--")
      break;
    llvm::StringRef flag = arg.ltrim('-');
    if (arg.starts_with("-") &&
        (flag.starts_with("help") || flag.starts_with("version") ||
         flag.starts_with("print-options") ||
         flag.starts_with("print-all-options")))
      return true;
    if (arg.starts_with("@")) // a response file: let the full parser read it
      return true;
  }
  return false;
}

/// Parses the command line with nothing printed: a command line this
/// binary cannot take is handed over, and the compiler tool reports its
/// errors once. (Some of LLVM's parser messages go to stderr whatever
/// stream it is given, hence the file descriptor's detour.)
static bool parseQuietly(int argc, char **argv) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  llvm::errs().flush();
  int saved = ::dup(STDERR_FILENO);
  int null = ::open("/dev/null", O_WRONLY);
  if (saved >= 0 && null >= 0)
    ::dup2(null, STDERR_FILENO);
  bool ok = llvm::cl::ParseCommandLineOptions(argc, argv, "", &os);
  llvm::errs().flush();
  if (saved >= 0 && null >= 0)
    ::dup2(saved, STDERR_FILENO);
  if (null >= 0)
    ::close(null);
  if (saved >= 0)
    ::close(saved);
  return ok;
}

int main(int argc, char **argv) {
  hesper::tools::armCrashWatchdog();
  std::vector<char *> original(argv, argv + argc);
  original.push_back(nullptr);
  if (compilerToolAskedFor(argc, argv))
    return runCompilerTool(original);

  std::vector<std::string> renamed;
  hesper::tools::renameThreadsFlag(argc, argv, renamed);
  // A flag this binary does not know is the compiler tool's (or an error
  // it reports): parse quietly and hand over.
  if (!parseQuietly(argc, argv))
    return runCompilerTool(original);
  if (run::cacheInfoAsked())
    return run::printCacheInfo(llvm::outs());
  std::string model = run::modelPath(inputFilename);
  // Outside a git checkout each binary keys the cache by its own file, and
  // this one's keys would never match the compiler tool's entries.
  if (model.empty() || run::interpreterChosen() ||
      run::modelModeNeedsCompiler() || !models::compilerIdentityIsShared() ||
      (run::deviceIndexGiven() && run::deviceFlags().deviceIndex < 0))
    return runCompilerTool(original);

  run::ModelModeHooks hooks;
  hooks.openSession = [&](const models::Model &m, rt::Device *device,
                          const models::SessionOptions &options)
      -> rt::Result<std::unique_ptr<models::Session>> {
    if (device)
      if (auto session = models::Session::openCached(m, *device, options))
        return std::move(*session);
    // No device (auto found none: the interpreter) or no usable entry:
    // the compiler tool compiles, stores the entry and runs.
    std::exit(runCompilerTool(original));
  };
  int status =
      run::runModelMode(model, run::deviceFlags(), /*interpreter=*/false,
                        hooks);
  if (uint64_t messages = rt::validationMessageCount()) {
    llvm::errs() << "error: the Vulkan validation layer reported "
                 << messages << " message(s)\n";
    return 1;
  }
  return status;
}
