//===- BenchMode.h - hesper-run --bench: llama-bench's tests ----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TOOLS_HESPER_RUN_BENCHMODE_H
#define HESPER_TOOLS_HESPER_RUN_BENCHMODE_H

#include "Hesper/Models/Session.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace hesper::run {

/// What `hesper-run --bench` measures, as llama-bench's -p, -n, -d, -r
/// and -o json: a prompt test (ppN) per prompt size and a generation test
/// (tgN) per generation length, each at every depth, `reps` times.
struct BenchSpec {
  std::vector<int64_t> prompts{512}, gens{128}, depths{0};
  int reps = 5;
  bool json = false;
};

/// Runs the tests on `s` (a single-sequence session, left at position 0)
/// and prints them to `out` as llama-bench does (a Markdown table, or its
/// JSON keys); errors go to `err`. Returns the exit status.
int runBench(models::Session &s, const models::Model &model,
             const std::string &path, const std::string &backend,
             const BenchSpec &spec, llvm::raw_ostream &out,
             llvm::raw_ostream &err);

} // namespace hesper::run

#endif // HESPER_TOOLS_HESPER_RUN_BENCHMODE_H
