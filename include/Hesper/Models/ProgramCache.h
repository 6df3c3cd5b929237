//===- ProgramCache.h - Compiled model programs kept on disk ----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A session's compiled steps (decode, prompt chunk, batch steps: their
// programs and how their arguments bind) are stored in a cache folder under
// a key of everything that changes them, so that the next start with the
// same key loads them without building an MLIR context (docs/Models.md,
// "Program cache"). An entry is one rt::ProgramSet image (checksummed),
// written to a temporary name and renamed into place.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_PROGRAMCACHE_H
#define HESPER_MODELS_PROGRAMCACHE_H

#include "Hesper/Models/Model.h"
#include "Hesper/Models/Session.h"
#include "hesper/runtime/Program.h"

namespace hesper::models {

/// Where compiled programs are cached: $HESPER_CACHE_DIR/programs, else
/// $XDG_CACHE_HOME/hesper/programs, else $HOME/.cache/hesper/programs;
/// "" when none of those variables is set.
std::string defaultProgramCacheDir();

/// The compiler's identity in keys: the git tree hash of the source tree
/// it was built from, uncommitted changes included
/// (cmake/SourceStamp.cmake), so that every binary of one build shares
/// entries and a changed compiler never reads old ones; outside a git
/// checkout, the file that holds this code (path, size, modification time).
std::string compilerIdentity();
/// Whether compilerIdentity() is the source tree's stamp, which every binary
/// of the build shares (not a file of one binary).
bool compilerIdentityIsShared();

/// The bytes of the tuning cache a compile reads (tune-cache.json in
/// $HESPER_CACHE_DIR), or "" when there is none: its plans change kernels.
std::string tuningFingerprint();

/// The key of a model's programs (SHA-256, 64 hex digits) over everything
/// that changes them: the file's metadata and its tensors' names, types
/// and shapes (not their values), the options that shape the graphs
/// (context, chunk size, all-row logits, sequences, batch invariance,
/// fusion), the device's cache id and backend, the tuning fingerprint and
/// the compiler's identity.
std::string programCacheKey(const Model &model, const SessionOptions &options,
                            int64_t contextSize, const rt::DeviceInfo &device,
                            const std::string &tuning,
                            const std::string &compiler);

/// The entry file of `key` in folder `dir`.
std::string programCacheEntryPath(const std::string &dir,
                                  const std::string &key);

/// Reads an entry: an error (one line) for a missing, cut or changed file.
rt::Result<rt::ProgramSet> readProgramCacheEntry(const std::string &path);
/// Writes an entry: into a temporary file of a unique name in the same
/// folder (created if needed), then renamed over `path`, so that readers
/// and concurrent writers see a whole entry or none.
rt::Status writeProgramCacheEntry(const std::string &path,
                                  const std::string &metadata,
                                  const std::vector<rt::Program> &programs);

struct ProgramCacheInfo {
  std::string dir;
  int64_t entries = 0;
  uint64_t bytes = 0;
  uint64_t limitBytes = 0;      ///< programCacheLimitBytes()
  int64_t hits = 0, misses = 0; ///< since the folder was made
  int64_t evictions = 0;        ///< entries removed to stay under the limit
};

/// The most bytes of entries a cache folder keeps:
/// $HESPER_PROGRAM_CACHE_MAX_MB (MiB, a number above 0, fractions allowed)
/// when set and valid, else 1 GiB.
uint64_t programCacheLimitBytes();
/// Marks an entry as just used (its modification time), so that eviction,
/// which removes the entries used longest ago, keeps it.
void touchProgramCacheEntry(const std::string &path);
/// Removes the entries of `dir` used longest ago until their bytes are at
/// most `limitBytes`, never `keep` (the entry just written); returns how
/// many it removed and counts them in the folder's statistics.
int64_t evictProgramCacheEntries(const std::string &dir, uint64_t limitBytes,
                                 const std::string &keep);
/// What folder `dir` holds (entries, their bytes) and its counts of hits
/// and misses.
ProgramCacheInfo programCacheInfo(const std::string &dir);
/// Counts a hit or a miss in `dir`'s statistics (best effort: two starts
/// at the same moment may count once).
void recordProgramCacheUse(const std::string &dir, bool hit);

} // namespace hesper::models

#endif // HESPER_MODELS_PROGRAMCACHE_H
