//===- ProgramCache.cpp - Compiled model programs kept on disk ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/ProgramCache.h"
#include "Hesper/Models/SourceStamp.inc"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <tuple>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace hesper;
using namespace hesper::models;

std::string hesper::models::defaultProgramCacheDir() {
  auto under = [](const char *var, const char *sub) -> std::string {
    const char *v = std::getenv(var);
    if (!v || !*v)
      return "";
    llvm::SmallString<128> path(v);
    llvm::sys::path::append(path, sub);
    return std::string(path);
  };
  for (auto [var, sub] : {std::pair{"HESPER_CACHE_DIR", "programs"},
                          std::pair{"XDG_CACHE_HOME", "hesper/programs"},
                          std::pair{"HOME", ".cache/hesper/programs"}})
    if (std::string dir = under(var, sub); !dir.empty())
      return dir;
  return "";
}

std::string hesper::models::compilerIdentity() {
  // Every binary built from one source tree (hesper-run, hesper-server, the
  // Python module) shares entries. Outside a git checkout the stamp is
  // unknown: then the file holding this code (path, size, modification
  // time) stands in, so that a rebuilt compiler still never reads another
  // build's entries.
  std::string id = std::string("hesper ") + HESPER_SOURCE_STAMP;
  if (llvm::StringRef(HESPER_SOURCE_STAMP) != "unknown")
    return id;
  Dl_info info;
  struct stat st;
  if (dladdr(reinterpret_cast<void *>(&compilerIdentity), &info) &&
      info.dli_fname && ::stat(info.dli_fname, &st) == 0)
    id += std::string(" ") + info.dli_fname + " " +
          std::to_string(st.st_size) + " " +
          std::to_string(st.st_mtim.tv_sec) + "." +
          std::to_string(st.st_mtim.tv_nsec);
  return id;
}

bool hesper::models::compilerIdentityIsShared() {
  return llvm::StringRef(HESPER_SOURCE_STAMP) != "unknown";
}

std::string hesper::models::tuningFingerprint() {
  // The tuning cache's place as hesper-tune writes it (tune::cachePath in
  // Plan.cpp, which this library cannot link: it has no MLIR).
  const char *dir = std::getenv("HESPER_CACHE_DIR");
  if (!dir || !*dir)
    return "";
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "tune-cache.json");
  auto file = llvm::MemoryBuffer::getFile(path);
  return file ? (*file)->getBuffer().str() : "";
}

namespace {
/// Feeds values to SHA-256, each with its length, so that no two sequences
/// of fields give the same bytes.
class KeyHasher {
public:
  void field(llvm::StringRef s) {
    uint64_t n = s.size();
    h.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<uint8_t *>(&n), 8));
    h.update(s);
  }
  void number(int64_t v) { field(std::to_string(v)); }
  void value(const rt::GgufValue &v) {
    number(static_cast<int64_t>(v.type));
    number(v.i);
    number(static_cast<int64_t>(v.u));
    // Doubles by their bits: 0.1f and its nearest double differ.
    uint64_t bits;
    std::memcpy(&bits, &v.f, 8);
    number(static_cast<int64_t>(bits));
    field(v.str);
    number(static_cast<int64_t>(v.array.size()));
    for (const rt::GgufValue &e : v.array)
      value(e);
  }
  std::string hex() {
    std::array<uint8_t, 32> digest = h.final();
    return llvm::toHex(digest, /*LowerCase=*/true);
  }

private:
  llvm::SHA256 h;
};
} // namespace

std::string hesper::models::programCacheKey(const Model &model,
                                            const SessionOptions &options,
                                            int64_t contextSize,
                                            const rt::DeviceInfo &device,
                                            const std::string &tuning,
                                            const std::string &compiler) {
  KeyHasher k;
  k.field("hesper program cache 1");
  k.field(compiler);
  k.field(device.cacheId);
  k.number(static_cast<int64_t>(device.backend));
  k.field(tuning);
  for (int64_t v : {contextSize, options.batchSize,
                    int64_t(options.allLogits), options.sequences,
                    int64_t(options.batchInvariant), int64_t(options.fuse),
                    int64_t(options.cacheTypes.k),
                    int64_t(options.cacheTypes.v),
                    int64_t(options.quantizedActivations.value_or(false)),
                    options.matrixUnits ? int64_t(*options.matrixUnits)
                                        : int64_t(2)})
    k.number(v);
  const rt::GgufFile &file = model.file();
  // The tokenizer's keys (its vocabulary, merges and scores: hundreds of
  // thousands of values in a downloaded model, which took most of a warm
  // start to hash) only set up the host's tokenizer; the graphs take the
  // vocabulary's size from the embedding's shape.
  int64_t graphKeys = 0;
  for (const auto &[key, value] : file.metadata()) {
    if (llvm::StringRef(key).starts_with("tokenizer."))
      continue;
    k.field(key);
    k.value(value);
    ++graphKeys;
  }
  k.number(graphKeys);
  k.number(static_cast<int64_t>(file.tensors().size()));
  for (const rt::GgufTensor &t : file.tensors()) {
    k.field(t.name);
    k.number(static_cast<int64_t>(t.type));
    k.number(static_cast<int64_t>(t.dims.size()));
    for (int64_t d : t.dims)
      k.number(d);
  }
  return k.hex();
}

std::string hesper::models::programCacheEntryPath(const std::string &dir,
                                                  const std::string &key) {
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, key + ".hpc");
  return std::string(path);
}

rt::Result<rt::ProgramSet>
hesper::models::readProgramCacheEntry(const std::string &path) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return rt::Status::error(path + ": " + file.getError().message());
  llvm::StringRef bytes = (*file)->getBuffer();
  return rt::unpackPrograms(reinterpret_cast<const uint8_t *>(bytes.data()),
                            bytes.size(), path);
}

rt::Status hesper::models::writeProgramCacheEntry(
    const std::string &path, const std::string &metadata,
    const std::vector<rt::Program> &programs) {
  return rt::writeFileAtomically(path, rt::packPrograms(metadata, programs));
}

static std::string statsPath(const std::string &dir) {
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "stats");
  return std::string(path);
}

namespace {
/// The folder's counts, kept in its stats file as "hits N" lines.
struct Counts {
  int64_t hits = 0, misses = 0, evictions = 0;
};
} // namespace

static Counts readCounts(const std::string &dir) {
  std::ifstream in(statsPath(dir));
  std::string word;
  Counts counts;
  int64_t n = 0;
  while (in >> word >> n) {
    if (word == "hits")
      counts.hits = n;
    else if (word == "misses")
      counts.misses = n;
    else if (word == "evictions")
      counts.evictions = n;
  }
  return counts;
}

static void writeCounts(const std::string &dir, const Counts &counts) {
  std::string text = "hits " + std::to_string(counts.hits) + "\nmisses " +
                     std::to_string(counts.misses) + "\nevictions " +
                     std::to_string(counts.evictions) + "\n";
  (void)rt::writeFileAtomically(
      statsPath(dir), std::vector<uint8_t>(text.begin(), text.end()));
}

void hesper::models::recordProgramCacheUse(const std::string &dir, bool hit) {
  Counts counts = readCounts(dir);
  (hit ? counts.hits : counts.misses) += 1;
  writeCounts(dir, counts);
}

uint64_t hesper::models::programCacheLimitBytes() {
  constexpr uint64_t kDefault = uint64_t(1) << 30;
  const char *text = std::getenv("HESPER_PROGRAM_CACHE_MAX_MB");
  double mib = 0;
  if (!text || llvm::StringRef(text).getAsDouble(mib) || !(mib > 0) ||
      mib > double(uint64_t(1) << 40))
    return kDefault;
  return static_cast<uint64_t>(mib * 1048576.0);
}

void hesper::models::touchProgramCacheEntry(const std::string &path) {
  int fd = -1;
  if (llvm::sys::fs::openFileForWrite(path, fd, llvm::sys::fs::CD_OpenExisting,
                                      llvm::sys::fs::OF_Append))
    return;
  (void)llvm::sys::fs::setLastAccessAndModificationTime(
      fd, std::chrono::system_clock::now());
  ::close(fd);
}

namespace {
struct Entry {
  std::string path;
  uint64_t bytes;
  llvm::sys::TimePoint<> used;
};
} // namespace

/// The folder's entries (*.hpc), with their sizes and last use.
static std::vector<Entry> listEntries(const std::string &dir) {
  std::vector<Entry> entries;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    if (llvm::sys::path::extension(it->path()) != ".hpc")
      continue;
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status))
      continue;
    entries.push_back(
        {it->path(), status.getSize(), status.getLastModificationTime()});
  }
  return entries;
}

int64_t hesper::models::evictProgramCacheEntries(const std::string &dir,
                                                 uint64_t limitBytes,
                                                 const std::string &keep) {
  std::vector<Entry> entries = listEntries(dir);
  uint64_t total = 0;
  for (const Entry &e : entries)
    total += e.bytes;
  if (total <= limitBytes)
    return 0;
  // Oldest use first; the path breaks ties, so the order is the same for
  // every process that looks.
  llvm::sort(entries, [](const Entry &a, const Entry &b) {
    return std::tie(a.used, a.path) < std::tie(b.used, b.path);
  });
  int64_t removed = 0;
  for (const Entry &e : entries) {
    if (total <= limitBytes)
      break;
    if (e.path == keep)
      continue;
    // Another process may have removed it first: its bytes are gone all
    // the same.
    (void)llvm::sys::fs::remove(e.path);
    total -= e.bytes;
    ++removed;
  }
  if (removed) {
    Counts counts = readCounts(dir);
    counts.evictions += removed;
    writeCounts(dir, counts);
  }
  return removed;
}

ProgramCacheInfo hesper::models::programCacheInfo(const std::string &dir) {
  ProgramCacheInfo info;
  info.dir = dir;
  for (const Entry &e : listEntries(dir)) {
    ++info.entries;
    info.bytes += e.bytes;
  }
  info.limitBytes = programCacheLimitBytes();
  Counts counts = readCounts(dir);
  info.hits = counts.hits;
  info.misses = counts.misses;
  info.evictions = counts.evictions;
  return info;
}
