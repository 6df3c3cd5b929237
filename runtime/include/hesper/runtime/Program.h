//===- Program.h - A compiled program and its runner ------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What the compiler hands the runtime: the kernels (binaries and ABI), the
// buffers of one step (the program's arguments first, then the ones it
// allocates), and the launches of a step in order. A ProgramRunner creates
// it all on a device, records the launches once, and replays them for every
// run -- no MLIR needed, so a Program can also be saved to a bundle file and
// run by a runtime-only build.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_PROGRAM_H
#define HESPER_RUNTIME_PROGRAM_H

#include "hesper/runtime/Runtime.h"

namespace hesper::rt {

struct ProgramBuffer {
  std::string name; ///< argument name, or "" for an internal buffer
  size_t bytes = 0;
};

/// The bytes a launch must move at the least, from the compiler's view of
/// the op it computes: every input read once and every output written once
/// (its compulsory traffic; what a kernel re-reads from caches is not in
/// it). A gather reads the rows it gathers, a scatter or write_rows writes
/// the elements it stores, an expert matmul reads the experts its slots
/// can select, and attention reads the cached positions a step attends:
/// those grow with the position, so they are counted per position.
/// `hesper-run --kernel-times` divides it by the launch's time.
struct LaunchTraffic {
  uint64_t readBytes = 0;    ///< read at every run
  uint64_t writtenBytes = 0; ///< written at every run
  uint64_t positionBytes = 0; ///< read per cached position attended
  uint64_t window = 0;        ///< positions a row sees at most (0: all)
  uint64_t positions = 0;     ///< the cache's positions (0: no cap)

  /// The bytes of a run of `rows` tokens at positions pos .. pos+rows-1:
  /// rows see positions up to pos+rows-1, the first row back to
  /// pos-window+1 with a window.
  uint64_t bytes(uint64_t pos, uint64_t rows) const;
};

struct ProgramLaunch {
  uint32_t kernel = 0;           ///< index into Program::kernels
  std::vector<uint32_t> buffers; ///< indices into Program::buffers
  uint32_t grid[3] = {1, 1, 1};
  LaunchTraffic traffic; ///< all zero where the compiler did not say
};

struct Program {
  std::string name;
  Backend backend = Backend::Vulkan;
  std::vector<KernelDesc> kernels;
  /// Buffers 0 .. numArguments-1 are the program's arguments, in order.
  std::vector<ProgramBuffer> buffers;
  uint32_t numArguments = 0;
  std::vector<ProgramLaunch> launches;
  /// The buffers holding the program's results, in order.
  std::vector<uint32_t> results;

  /// Checks that every index is in range and every launch binds as many
  /// buffers as its kernel takes.
  Status verify() const;
};

/// Writes a Program to a self-contained bundle file and reads it back.
/// The bundle image of `program` (what saveBundle writes).
std::vector<uint8_t> serializeBundle(const Program &program);
Status saveBundle(const Program &program, const std::string &path);
Result<Program> loadBundle(const std::string &path);
/// Reads a bundle from memory; errors name `path`.
Result<Program> parseBundle(const uint8_t *bytes, size_t size,
                            const std::string &path);

/// A Program instantiated on a device: buffers allocated, kernels created,
/// the step recorded once.
/// Several programs and a caller's metadata text (a model's compiled steps
/// and how to bind them: a program cache entry), as one checksummed image.
struct ProgramSet {
  std::string metadata;
  std::vector<Program> programs;
};
std::vector<uint8_t> packPrograms(const std::string &metadata,
                                  const std::vector<Program> &programs);
/// Reads packPrograms' image; a changed or cut image is an error naming
/// `what`.
Result<ProgramSet> unpackPrograms(const uint8_t *bytes, size_t size,
                                  const std::string &what);

class ProgramRunner {
public:
  /// `shared`, when not empty, has one entry per argument: a non-null entry
  /// is an existing buffer of the argument's size that the runner uses
  /// instead of allocating one (it does not own it; it must outlive the
  /// runner). Two programs over the same weights and caches -- a model's
  /// decode step and its prompt chunk -- share them this way.
  static Result<std::unique_ptr<ProgramRunner>>
  create(Device &device, const Program &program, bool timing,
         const std::vector<Buffer *> &shared = {});

  /// Copies an argument's contents in (its size must match exactly).
  Status setArgument(uint32_t index, const void *data, size_t bytes);
  /// The same for a host tensor that may be shorter than its buffer (a
  /// block-stored tensor ends mid-word, its buffer on a whole word): the
  /// rest of the buffer is zeroed. A longer one is refused.
  Status setArgumentPadded(uint32_t index, const void *data, size_t bytes);
  /// Runs the recorded step once (submit and wait).
  Status run();
  Status readArgument(uint32_t index, std::vector<uint8_t> &out);
  Status readResult(uint32_t index, std::vector<uint8_t> &out);
  /// Per-launch GPU times of the last run, in nanoseconds (empty without
  /// timing).
  std::vector<double> lastKernelTimesNs() const;
  const Program &program() const { return prog; }
  /// The device buffer of argument `index` (null when out of range), for
  /// sharing with another runner.
  Buffer *argumentBuffer(uint32_t index) const {
    return index < prog.numArguments ? buffers[index] : nullptr;
  }

private:
  ProgramRunner(Device &device, const Program &program)
      : device(device), prog(program) {}
  Status readBuffer(uint32_t buffer, std::vector<uint8_t> &out);

  Device &device;
  Program prog;
  std::vector<Buffer *> buffers;                  ///< by program buffer
  std::vector<std::unique_ptr<Buffer>> ownedBuffers; ///< the ones allocated
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::unique_ptr<CommandList> commands;
};

} // namespace hesper::rt

#endif // HESPER_RUNTIME_PROGRAM_H
