//===- Program.cpp - A compiled program, its bundle file and runner -------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Bundle file layout (little-endian): the 8-byte magic "HESPERPB", a u32
// format version, then the Program's fields in declaration order. Strings
// and byte arrays are a u64 length and the bytes; vectors a u64 count and
// the elements. Nothing in it depends on the machine that wrote it.
//
// Versions: 1 stored a u32 "binary is PTX" flag per kernel; 2 stores the
// kernel's format string in its place; 3 ends the file with a u64 checksum
// (hashBytes of every byte before it), so that a changed bit anywhere --
// a kernel's code, a buffer size, a binding index -- is refused before
// anything reaches a driver; 4 adds each kernel's binding sizes and
// read-only flags (its ABI), against which every launch's buffers are
// checked; 5 adds each kernel's host thread cap (KernelDesc::hostThreads)
// after its workgroup memory bytes; 6 adds, after the read-only flags, the
// largest grid each kernel was compiled for (KernelDesc::maxGrid), against
// which every launch's grid is checked; 7 stores each distinct kernel
// binary once, in a table before the kernels (a count, then byte arrays),
// and each kernel's binary as a u32 index into it (a program's kernels
// usually share one binary: its module's); 8 adds each launch's traffic
// (LaunchTraffic: five u64s after its grid). Files of another version are
// refused.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Program.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

using namespace hesper::rt;

static constexpr char kMagic[8] = {'H', 'E', 'S', 'P', 'E', 'R', 'P', 'B'};
static constexpr uint32_t kVersion = 8;

uint64_t LaunchTraffic::bytes(uint64_t pos, uint64_t rows) const {
  uint64_t end = pos + rows;
  if (positions != 0)
    end = std::min(end, positions);
  uint64_t begin = window != 0 && pos + 1 > window ? pos + 1 - window : 0;
  uint64_t attended = end > begin ? end - begin : 0;
  return readBytes + writtenBytes + positionBytes * attended;
}

Status Program::verify() const {
  if (numArguments > buffers.size())
    return Status::error("program '" + name + "' has " +
                         std::to_string(numArguments) + " arguments but " +
                         std::to_string(buffers.size()) + " buffers");
  // A kernel's ABI, when present, describes every binding.
  for (const KernelDesc &k : kernels) {
    if (!k.bindingBytes.empty() && k.bindingBytes.size() != k.numBindings)
      return Status::error("kernel '" + k.name + "' describes " +
                           std::to_string(k.bindingBytes.size()) +
                           " binding sizes for " +
                           std::to_string(k.numBindings) + " bindings");
    if (!k.bindingReadOnly.empty() &&
        k.bindingReadOnly.size() != k.numBindings)
      return Status::error("kernel '" + k.name + "' describes " +
                           std::to_string(k.bindingReadOnly.size()) +
                           " binding accesses for " +
                           std::to_string(k.numBindings) + " bindings");
  }
  for (size_t i = 0; i < launches.size(); ++i) {
    const ProgramLaunch &l = launches[i];
    std::string where = "launch #" + std::to_string(i);
    if (l.kernel >= kernels.size())
      return Status::error(where + " names kernel #" +
                           std::to_string(l.kernel) + " of " +
                           std::to_string(kernels.size()));
    if (l.buffers.size() != kernels[l.kernel].numBindings)
      return Status::error(where + " binds " +
                           std::to_string(l.buffers.size()) +
                           " buffers to '" + kernels[l.kernel].name +
                           "', which takes " +
                           std::to_string(kernels[l.kernel].numBindings));
    for (uint32_t b : l.buffers)
      if (b >= buffers.size())
        return Status::error(where + " binds buffer #" + std::to_string(b) +
                             " of " + std::to_string(buffers.size()));
    // The kernel's ABI: each binding's buffer has the size its code
    // indexes, so a changed size or a swap of differently sized buffers is
    // refused here rather than read or written out of bounds.
    const KernelDesc &k = kernels[l.kernel];
    // The kernel's ABI again: a grid past the one its code was compiled
    // for runs workgroups that index past their buffers (a CPU kernel's
    // native code has no other guard).
    for (int d = 0; d < 3; ++d)
      if (k.maxGrid[d] != 0 && l.grid[d] > k.maxGrid[d])
        return Status::error(
            where + " runs '" + k.name + "' over " +
            std::to_string(l.grid[d]) + " workgroups in dimension " +
            std::to_string(d) + ", more than the " +
            std::to_string(k.maxGrid[d]) + " it was compiled for");
    for (size_t j = 0; j < k.bindingBytes.size(); ++j) {
      uint64_t have = buffers[l.buffers[j]].bytes;
      if (k.bindingBytes[j] != 0 && have != k.bindingBytes[j])
        return Status::error(where + " binds buffer #" +
                             std::to_string(l.buffers[j]) + " (" +
                             std::to_string(have) + " bytes) to binding " +
                             std::to_string(j) + " of '" + k.name +
                             "', which takes " +
                             std::to_string(k.bindingBytes[j]) + " bytes");
    }
  }
  for (uint32_t r : results)
    if (r >= buffers.size())
      return Status::error("result buffer #" + std::to_string(r) + " of " +
                           std::to_string(buffers.size()));
  // Internal buffers start undefined: a kernel may only read one that an
  // earlier launch wrote (a read-write binding), and a result must have
  // been written. A program whose bindings were swapped fails this even
  // where the swapped buffers have one size.
  std::vector<bool> written(buffers.size(), false);
  for (uint32_t a = 0; a < numArguments; ++a)
    written[a] = true;
  for (size_t i = 0; i < launches.size(); ++i) {
    const ProgramLaunch &l = launches[i];
    const KernelDesc &k = kernels[l.kernel];
    for (size_t j = 0; j < k.bindingReadOnly.size(); ++j)
      if (k.bindingReadOnly[j] && !written[l.buffers[j]])
        return Status::error(
            "launch #" + std::to_string(i) + " of '" + k.name +
            "' reads buffer #" + std::to_string(l.buffers[j]) +
            " (binding " + std::to_string(j) +
            ") before any launch has written it");
    for (size_t j = 0; j < l.buffers.size(); ++j)
      if (k.bindingReadOnly.empty() || !k.bindingReadOnly[j])
        written[l.buffers[j]] = true;
  }
  for (uint32_t r : results)
    if (!written[r])
      return Status::error("result buffer #" + std::to_string(r) +
                           " is never written");
  return Status();
}

//===----------------------------------------------------------------------===//
// Bundle files
//===----------------------------------------------------------------------===//

namespace {
class Writer {
public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void bytes(const void *p, size_t n) {
    u64(n);
    raw(p, n);
  }
  void str(const std::string &s) { bytes(s.data(), s.size()); }
  void raw(const void *p, size_t n) {
    const auto *c = static_cast<const uint8_t *>(p);
    out.insert(out.end(), c, c + n);
  }
  std::vector<uint8_t> out;
};

class Reader {
public:
  Reader(const std::vector<uint8_t> &data) : data(data) {}
  bool u32(uint32_t &v) { return raw(&v, 4); }
  bool u64(uint64_t &v) { return raw(&v, 8); }
  bool count(uint64_t &n, size_t elementBytes) {
    // A count can never exceed what is left of the file.
    return u64(n) && n <= (data.size() - pos) / std::max<size_t>(1, elementBytes);
  }
  bool bytes(std::vector<uint8_t> &v) {
    uint64_t n;
    if (!count(n, 1))
      return false;
    v.assign(data.begin() + pos, data.begin() + pos + n);
    pos += n;
    return true;
  }
  bool str(std::string &s) {
    std::vector<uint8_t> v;
    if (!bytes(v))
      return false;
    s.assign(v.begin(), v.end());
    return true;
  }
  bool raw(void *p, size_t n) {
    if (data.size() - pos < n)
      return false;
    std::memcpy(p, data.data() + pos, n);
    pos += n;
    return true;
  }
  bool atEnd() const { return pos == data.size(); }

private:
  const std::vector<uint8_t> &data;
  size_t pos = 0;
};
} // namespace

std::vector<uint8_t> hesper::rt::serializeBundle(const Program &program) {
  Writer w;
  w.raw(kMagic, sizeof(kMagic));
  w.u32(kVersion);
  w.str(program.name);
  w.u32(static_cast<uint32_t>(program.backend));
  std::vector<const std::vector<uint8_t> *> binaries;
  std::vector<uint32_t> binaryOf;
  for (const KernelDesc &k : program.kernels) {
    size_t i = 0;
    while (i < binaries.size() && *binaries[i] != k.binary)
      ++i;
    if (i == binaries.size())
      binaries.push_back(&k.binary);
    binaryOf.push_back(static_cast<uint32_t>(i));
  }
  w.u64(binaries.size());
  for (const std::vector<uint8_t> *binary : binaries)
    w.bytes(binary->data(), binary->size());
  w.u64(program.kernels.size());
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    const KernelDesc &k = program.kernels[i];
    w.str(k.name);
    w.u32(binaryOf[i]);
    w.str(k.format);
    w.u32(k.numBindings);
    w.u32(k.pushConstantBytes);
    for (uint32_t s : k.workgroupSize)
      w.u32(s);
    w.u32(k.sharedMemoryBytes);
    w.u32(k.hostThreads);
    w.u64(k.bindingBytes.size());
    for (uint64_t b : k.bindingBytes)
      w.u64(b);
    w.bytes(k.bindingReadOnly.data(), k.bindingReadOnly.size());
    for (uint32_t g : k.maxGrid)
      w.u32(g);
  }
  w.u64(program.buffers.size());
  for (const ProgramBuffer &b : program.buffers) {
    w.str(b.name);
    w.u64(b.bytes);
  }
  w.u32(program.numArguments);
  w.u64(program.launches.size());
  for (const ProgramLaunch &l : program.launches) {
    w.u32(l.kernel);
    w.u64(l.buffers.size());
    for (uint32_t b : l.buffers)
      w.u32(b);
    for (uint32_t g : l.grid)
      w.u32(g);
    const LaunchTraffic &t = l.traffic;
    for (uint64_t v : {t.readBytes, t.writtenBytes, t.positionBytes, t.window,
                       t.positions})
      w.u64(v);
  }
  w.u64(program.results.size());
  for (uint32_t r : program.results)
    w.u32(r);
  w.u64(hashBytes(w.out.data(), w.out.size()));
  return std::move(w.out);
}

Status hesper::rt::saveBundle(const Program &program, const std::string &path) {
  std::vector<uint8_t> bytes = serializeBundle(program);
  std::ofstream file(path, std::ios::binary);
  if (!file)
    return Status::error(path + ": cannot open for writing");
  file.write(reinterpret_cast<const char *>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  if (!file)
    return Status::error(path + ": write failed");
  return Status();
}

// A program set: the 8-byte magic "HESPERPS", a u32 version, the caller's
// metadata string, a u64 count and each program as a bundle image (a byte
// array), then a u64 checksum of every byte before it.
static constexpr char kSetMagic[8] = {'H', 'E', 'S', 'P', 'E', 'R', 'P', 'S'};
static constexpr uint32_t kSetVersion = 1;

std::vector<uint8_t>
hesper::rt::packPrograms(const std::string &metadata,
                         const std::vector<Program> &programs) {
  Writer w;
  w.raw(kSetMagic, sizeof(kSetMagic));
  w.u32(kSetVersion);
  w.str(metadata);
  w.u64(programs.size());
  for (const Program &p : programs) {
    std::vector<uint8_t> bundle = serializeBundle(p);
    w.bytes(bundle.data(), bundle.size());
  }
  w.u64(hashBytes(w.out.data(), w.out.size()));
  return std::move(w.out);
}

Result<ProgramSet> hesper::rt::unpackPrograms(const uint8_t *bytes,
                                              size_t size,
                                              const std::string &what) {
  auto bad = [&](const std::string &why) {
    return Status::error(what + ": not a valid program set (" + why + ")");
  };
  uint64_t stored = 0;
  if (size < sizeof(kSetMagic) + 4 + sizeof(stored))
    return bad("truncated");
  std::memcpy(&stored, bytes + size - sizeof(stored), sizeof(stored));
  std::vector<uint8_t> data(bytes, bytes + size - sizeof(stored));
  if (hashBytes(data.data(), data.size()) != stored)
    return bad("checksum mismatch: the file was changed or cut after it "
               "was written");
  Reader r(data);
  char magic[8];
  uint32_t version = 0;
  if (!r.raw(magic, 8) || std::memcmp(magic, kSetMagic, 8) != 0)
    return bad("bad magic");
  if (!r.u32(version) || version != kSetVersion)
    return bad("unsupported version");
  ProgramSet set;
  uint64_t n = 0;
  if (!r.str(set.metadata) || !r.count(n, 8))
    return bad("truncated header");
  for (uint64_t i = 0; i < n; ++i) {
    std::vector<uint8_t> bundle;
    if (!r.bytes(bundle))
      return bad("truncated program");
    auto program = parseBundle(bundle.data(), bundle.size(),
                               what + " #" + std::to_string(i));
    if (!program)
      return program.status();
    set.programs.push_back(std::move(*program));
  }
  if (!r.atEnd())
    return bad("trailing bytes");
  return set;
}

Result<Program> hesper::rt::loadBundle(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::error(path + ": cannot open");
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
  return parseBundle(data.data(), data.size(), path);
}

Result<Program> hesper::rt::parseBundle(const uint8_t *bytes, size_t size,
                                        const std::string &path) {
  std::vector<uint8_t> data(bytes, bytes + size);
  auto bad = [&](const char *what) {
    return Status::error(path + ": not a valid Hesper bundle (" + what + ")");
  };
  // The body is everything before the trailing checksum; its structure is
  // read first (so that a cut file says where), the checksum after.
  uint64_t stored = 0;
  bool haveChecksum = data.size() >= sizeof(kMagic) + 4 + sizeof(stored);
  if (haveChecksum) {
    std::memcpy(&stored, data.data() + data.size() - sizeof(stored),
                sizeof(stored));
    data.resize(data.size() - sizeof(stored));
  }
  Reader r(data);
  char magic[8];
  uint32_t version = 0;
  if (!r.raw(magic, 8) || std::memcmp(magic, kMagic, 8) != 0)
    return bad("bad magic");
  if (!r.u32(version) || version != kVersion)
    return bad("unsupported version");
  Program p;
  uint32_t backend;
  uint64_t n;
  if (!r.str(p.name) || !r.u32(backend) ||
      backend > static_cast<uint32_t>(Backend::Cpu) || !r.count(n, 8))
    return bad("truncated header");
  p.backend = static_cast<Backend>(backend);
  std::vector<std::vector<uint8_t>> binaries(n);
  for (std::vector<uint8_t> &binary : binaries)
    if (!r.bytes(binary))
      return bad("truncated binary");
  // A kernel takes at least 60 bytes: four lengths and seven u32s.
  if (!r.count(n, 60))
    return bad("truncated header");
  p.kernels.resize(n);
  for (KernelDesc &k : p.kernels) {
    uint64_t sizes;
    uint32_t binary;
    if (!r.str(k.name) || !r.u32(binary))
      return bad("truncated kernel");
    if (binary >= binaries.size())
      return bad("kernel binary index out of range");
    k.binary = binaries[binary];
    if (!r.str(k.format) ||
        !r.u32(k.numBindings) || !r.u32(k.pushConstantBytes) ||
        !r.u32(k.workgroupSize[0]) || !r.u32(k.workgroupSize[1]) ||
        !r.u32(k.workgroupSize[2]) || !r.u32(k.sharedMemoryBytes) ||
        !r.u32(k.hostThreads) || !r.count(sizes, 8))
      return bad("truncated kernel");
    k.bindingBytes.resize(sizes);
    for (uint64_t &b : k.bindingBytes)
      if (!r.u64(b))
        return bad("truncated kernel");
    if (!r.bytes(k.bindingReadOnly) || !r.u32(k.maxGrid[0]) ||
        !r.u32(k.maxGrid[1]) || !r.u32(k.maxGrid[2]))
      return bad("truncated kernel");
  }
  if (!r.count(n, 16))
    return bad("truncated buffers");
  p.buffers.resize(n);
  for (ProgramBuffer &b : p.buffers) {
    uint64_t bytes;
    if (!r.str(b.name) || !r.u64(bytes))
      return bad("truncated buffer");
    b.bytes = bytes;
  }
  // A launch takes at least 64 bytes: a u32, a length, three u32s and
  // five u64s.
  if (!r.u32(p.numArguments) || !r.count(n, 64))
    return bad("truncated launches");
  p.launches.resize(n);
  for (ProgramLaunch &l : p.launches) {
    uint64_t m;
    if (!r.u32(l.kernel) || !r.count(m, 4))
      return bad("truncated launch");
    l.buffers.resize(m);
    for (uint32_t &b : l.buffers)
      if (!r.u32(b))
        return bad("truncated launch");
    if (!r.u32(l.grid[0]) || !r.u32(l.grid[1]) || !r.u32(l.grid[2]))
      return bad("truncated launch");
    LaunchTraffic &t = l.traffic;
    if (!r.u64(t.readBytes) || !r.u64(t.writtenBytes) ||
        !r.u64(t.positionBytes) || !r.u64(t.window) || !r.u64(t.positions))
      return bad("truncated launch");
  }
  if (!r.count(n, 4))
    return bad("truncated results");
  p.results.resize(n);
  for (uint32_t &res : p.results)
    if (!r.u32(res))
      return bad("truncated results");
  if (!r.atEnd())
    return bad("trailing bytes");
  if (!haveChecksum)
    return bad("truncated checksum");
  if (hashBytes(data.data(), data.size()) != stored)
    return bad("checksum mismatch: the file was changed after it was "
               "written");
  if (Status s = p.verify(); !s)
    return Status::error(path + ": " + s.message());
  return p;
}

//===----------------------------------------------------------------------===//
// ProgramRunner
//===----------------------------------------------------------------------===//

Result<std::unique_ptr<ProgramRunner>>
ProgramRunner::create(Device &device, const Program &program, bool timing,
                      const std::vector<Buffer *> &shared) {
  if (Status s = program.verify(); !s)
    return s;
  if (program.backend != device.info().backend)
    return Status::error(std::string("program '") + program.name +
                         "' was compiled for " +
                         backendName(program.backend) + ", the device is " +
                         backendName(device.info().backend));
  if (!shared.empty() && shared.size() != program.numArguments)
    return Status::error("program '" + program.name + "' takes " +
                         std::to_string(program.numArguments) +
                         " arguments, " + std::to_string(shared.size()) +
                         " shared buffers were given");
  // A buffer larger than one binding may cover cannot be bound (lavapipe:
  // 128 MiB): say so before allocating anything.
  if (uint64_t limit = device.info().maxBindingBytes)
    for (const ProgramBuffer &b : program.buffers)
      if (b.bytes > limit)
        return Status::error(
            "buffer '" + (b.name.empty() ? std::string("(internal)")
                                         : b.name) +
            "' has " + std::to_string(b.bytes) + " bytes, more than " +
            device.info().name + " binds in one storage buffer (" +
            std::to_string(limit) + " bytes, maxStorageBufferRange)");
  std::unique_ptr<ProgramRunner> runner(new ProgramRunner(device, program));
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const ProgramBuffer &b = program.buffers[i];
    if (i < shared.size() && shared[i]) {
      if (shared[i]->size() < b.bytes)
        return Status::error("shared buffer for argument '" + b.name +
                             "' has " + std::to_string(shared[i]->size()) +
                             " bytes, the program needs " +
                             std::to_string(b.bytes));
      runner->buffers.push_back(shared[i]);
      continue;
    }
    auto buffer = device.createBuffer(b.bytes);
    if (!buffer)
      return buffer.status();
    runner->buffers.push_back(buffer->get());
    runner->ownedBuffers.push_back(std::move(*buffer));
  }
  for (const KernelDesc &k : program.kernels) {
    auto kernel = device.createKernel(k);
    if (!kernel)
      return kernel.status();
    runner->kernels.push_back(std::move(*kernel));
  }
  std::vector<Dispatch> dispatches;
  for (const ProgramLaunch &l : program.launches) {
    Dispatch d;
    d.kernel = runner->kernels[l.kernel].get();
    for (uint32_t b : l.buffers)
      d.bindings.push_back(runner->buffers[b]);
    std::memcpy(d.grid, l.grid, sizeof(d.grid));
    dispatches.push_back(std::move(d));
  }
  auto commands = device.createCommandList(timing);
  if (!commands)
    return commands.status();
  runner->commands = std::move(*commands);
  if (Status s = runner->commands->record(dispatches); !s)
    return s;
  return runner;
}

Status ProgramRunner::setArgument(uint32_t index, const void *data,
                                  size_t bytes) {
  if (index >= prog.numArguments)
    return Status::error("argument #" + std::to_string(index) + " of " +
                         std::to_string(prog.numArguments));
  if (bytes != prog.buffers[index].bytes)
    return Status::error("argument '" + prog.buffers[index].name + "' takes " +
                         std::to_string(prog.buffers[index].bytes) +
                         " bytes, got " + std::to_string(bytes));
  return device.upload(*buffers[index], data, bytes);
}

Status ProgramRunner::setArgumentPadded(uint32_t index, const void *data,
                                        size_t bytes) {
  if (index >= prog.numArguments || bytes >= prog.buffers[index].bytes)
    return setArgument(index, data, bytes);
  std::vector<uint8_t> padded(prog.buffers[index].bytes, 0);
  if (bytes)
    std::memcpy(padded.data(), data, bytes);
  return setArgument(index, padded.data(), padded.size());
}

Status ProgramRunner::run() { return commands->submit(); }

Status ProgramRunner::readBuffer(uint32_t buffer, std::vector<uint8_t> &out) {
  out.resize(prog.buffers[buffer].bytes);
  return device.download(*buffers[buffer], out.data(), out.size());
}

Status ProgramRunner::readArgument(uint32_t index, std::vector<uint8_t> &out) {
  if (index >= prog.numArguments)
    return Status::error("argument #" + std::to_string(index) + " of " +
                         std::to_string(prog.numArguments));
  return readBuffer(index, out);
}

Status ProgramRunner::readResult(uint32_t index, std::vector<uint8_t> &out) {
  if (index >= prog.results.size())
    return Status::error("result #" + std::to_string(index) + " of " +
                         std::to_string(prog.results.size()));
  return readBuffer(prog.results[index], out);
}

std::vector<double> ProgramRunner::lastKernelTimesNs() const {
  return commands->lastKernelTimesNs();
}
