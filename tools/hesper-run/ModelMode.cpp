//===- ModelMode.cpp - hesper-run on a GGUF model -------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// `hesper-run model.gguf -p "Once upon a time" -n 64`: flags in llama.cpp's
// habits, the library (Model, Session, generate) does the work, this file
// prints. Text goes to stdout as it is produced; timings go to stderr.
//
//===----------------------------------------------------------------------===//

#include "ModelMode.h"
#include "BenchMode.h"

#include "Hesper/Models/Chat.h"
#include "Hesper/Models/Generate.h"
#include "Hesper/Models/ProgramCache.h"
#include "hesper/runtime/Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <unistd.h>

using namespace hesper;
using namespace hesper::models;

static llvm::cl::OptionCategory modelCategory("Model mode (GGUF files)");

static llvm::cl::opt<std::string>
    modelFlag("m", llvm::cl::desc("GGUF model file (or give it as the "
                                  "positional argument)"),
              llvm::cl::value_desc("model.gguf"), llvm::cl::init(""),
              llvm::cl::cat(modelCategory));
static llvm::cl::alias modelAlias("model", llvm::cl::aliasopt(modelFlag),
                                  llvm::cl::cat(modelCategory));
static llvm::cl::opt<std::string>
    promptFlag("p", llvm::cl::desc("Prompt text"), llvm::cl::init(""),
               llvm::cl::cat(modelCategory));
static llvm::cl::alias promptAlias("prompt", llvm::cl::aliasopt(promptFlag),
                                   llvm::cl::cat(modelCategory));
static llvm::cl::opt<std::string>
    promptFile("f", llvm::cl::desc("Read the prompt from a file"),
               llvm::cl::init(""), llvm::cl::cat(modelCategory));
static llvm::cl::alias promptFileAlias("file", llvm::cl::aliasopt(promptFile),
                                       llvm::cl::cat(modelCategory));
static llvm::cl::opt<int> nPredict(
    "n", llvm::cl::desc("Tokens to generate (-1: until end of generation)"),
    llvm::cl::init(128), llvm::cl::cat(modelCategory));
static llvm::cl::alias nPredictAlias("n-predict", llvm::cl::aliasopt(nPredict),
                                     llvm::cl::cat(modelCategory));
static llvm::cl::opt<bool> ignoreEos(
    "ignore-eos",
    llvm::cl::desc("Generate past end-of-generation tokens (all -n tokens)"),
    llvm::cl::cat(modelCategory));
static llvm::cl::opt<bool> noWarmup(
    "no-warmup",
    llvm::cl::desc("Do not run a token through the model before the "
                   "prompt (as llama.cpp's --no-warmup): the first prompt "
                   "then pays the first touch of the weights"),
    llvm::cl::cat(modelCategory));
static llvm::cl::OptionCategory benchCategory(
    "Benchmark (--bench: llama-bench's tests on a GGUF model)");
static llvm::cl::opt<bool> benchFlag(
    "bench",
    llvm::cl::desc("Measure prompt processing (ppN) and generation (tgN) "
                   "speed as llama-bench does, instead of generating text"),
    llvm::cl::cat(benchCategory));
static llvm::cl::list<int64_t> benchPrompt(
    "bench-prompt",
    llvm::cl::desc("Prompt sizes of the pp tests (llama-bench's -p; "
                   "default 512, 0: none)"),
    llvm::cl::CommaSeparated, llvm::cl::cat(benchCategory));
static llvm::cl::list<int64_t> benchGen(
    "bench-gen",
    llvm::cl::desc("Token counts of the tg tests (llama-bench's -n; "
                   "default 128, 0: none)"),
    llvm::cl::CommaSeparated, llvm::cl::cat(benchCategory));
static llvm::cl::list<int64_t> benchDepth(
    "bench-depth",
    llvm::cl::desc("Tokens in the KV cache before each test (llama-bench's "
                   "-d; default 0)"),
    llvm::cl::CommaSeparated, llvm::cl::cat(benchCategory));
static llvm::cl::opt<int> benchReps(
    "bench-reps",
    llvm::cl::desc("Timed runs of each test (llama-bench's -r)"),
    llvm::cl::init(5), llvm::cl::cat(benchCategory));
static llvm::cl::opt<std::string> benchOutput(
    "bench-output",
    llvm::cl::desc("md (a Markdown table) or json (llama-bench's -o json "
                   "keys)"),
    llvm::cl::init("md"), llvm::cl::cat(benchCategory));
static llvm::cl::opt<int64_t> ctxSize(
    "c", llvm::cl::desc("KV cache positions (0: the model's context, at "
                        "most 4096)"),
    llvm::cl::init(0), llvm::cl::cat(modelCategory));
static llvm::cl::alias ctxAlias("ctx-size", llvm::cl::aliasopt(ctxSize),
                                llvm::cl::cat(modelCategory));
static llvm::cl::opt<int64_t> batchSize(
    "b",
    llvm::cl::desc("Prompt tokens per chunk (1: token by token; 0, the "
                   "default: 512 on a GPU, 64 on the CPU target, 32 on "
                   "lavapipe and the interpreter)"),
    llvm::cl::init(0), llvm::cl::cat(modelCategory));
static llvm::cl::alias batchAlias("batch-size", llvm::cl::aliasopt(batchSize),
                                  llvm::cl::cat(modelCategory));
static llvm::cl::opt<std::string> cacheTypeK(
    "ctk", llvm::cl::desc("KV cache type of K: f16 (default, as llama.cpp), f32 or q8_0"),
    llvm::cl::init("f16"), llvm::cl::cat(modelCategory));
static llvm::cl::alias cacheTypeKAlias("cache-type-k",
                                       llvm::cl::aliasopt(cacheTypeK),
                                       llvm::cl::cat(modelCategory));
static llvm::cl::opt<std::string> cacheTypeV(
    "ctv", llvm::cl::desc("KV cache type of V: f16 (default, as llama.cpp), f32 or q8_0"),
    llvm::cl::init("f16"), llvm::cl::cat(modelCategory));
static llvm::cl::alias cacheTypeVAlias("cache-type-v",
                                       llvm::cl::aliasopt(cacheTypeV),
                                       llvm::cl::cat(modelCategory));
static llvm::cl::opt<llvm::cl::boolOrDefault> quantizeActivations(
    "quantize-activations",
    llvm::cl::desc("Quantize the input of every q8_0/q4_0/q4_k projection "
                   "(q6_k in one-token steps; q2_k, i2_s and tq2_0) "
                   "to q8_1 and multiply bytes in integers, as llama.cpp's "
                   "CPU backend does (=false: f32 input, exact products; "
                   "default: on for the CPU target, off elsewhere and with "
                   "--emit-mlir)"),
    llvm::cl::cat(modelCategory));
static llvm::cl::opt<float>
    temperature("temp", llvm::cl::desc("Sampling temperature (0: greedy)"),
                llvm::cl::init(0.8f), llvm::cl::cat(modelCategory));
static llvm::cl::opt<int> topK("top-k", llvm::cl::desc("Top-k (0: off)"),
                               llvm::cl::init(40),
                               llvm::cl::cat(modelCategory));
static llvm::cl::opt<float> topP("top-p", llvm::cl::desc("Top-p (1: off)"),
                                 llvm::cl::init(0.95f),
                                 llvm::cl::cat(modelCategory));
static llvm::cl::opt<float> minP("min-p", llvm::cl::desc("Min-p (0: off)"),
                                 llvm::cl::init(0.05f),
                                 llvm::cl::cat(modelCategory));
static llvm::cl::opt<float>
    repeatPenalty("repeat-penalty",
                  llvm::cl::desc("Repetition penalty (1: off)"),
                  llvm::cl::init(1.0f), llvm::cl::cat(modelCategory));
static llvm::cl::opt<int> repeatLastN(
    "repeat-last-n",
    llvm::cl::desc("Tokens the repetition penalty looks at (-1: all)"),
    llvm::cl::init(64), llvm::cl::cat(modelCategory));
static llvm::cl::opt<int64_t>
    seed("seed", llvm::cl::desc("Sampling seed (-1: from the clock)"),
         llvm::cl::init(-1), llvm::cl::cat(modelCategory));
static llvm::cl::opt<std::string> tokenIds(
    "tokens",
    llvm::cl::desc("Comma-separated token ids to use instead of a prompt "
                   "(no BOS is added)"),
    llvm::cl::init(""), llvm::cl::cat(modelCategory));
static llvm::cl::opt<bool>
    printTokenIds("print-token-ids",
                  llvm::cl::desc("Print the prompt's and the generated "
                                 "token ids"),
                  llvm::cl::init(false), llvm::cl::cat(modelCategory));
static llvm::cl::opt<std::string> dumpLogits(
    "dump-logits",
    llvm::cl::desc("Write the f32 logits of every processed position as "
                   ".npy, shape [positions, vocabulary]"),
    llvm::cl::init(""), llvm::cl::cat(modelCategory));
static llvm::cl::opt<bool> kernelTimes(
    "kernel-times",
    llvm::cl::desc("Time every kernel with device timestamps and print where "
                   "a token's time goes"),
    llvm::cl::init(false), llvm::cl::cat(modelCategory));
static llvm::cl::opt<std::string> emitMlir(
    "emit-mlir",
    llvm::cl::desc("Write the model's Circuit graphs (@decode and, with -b > "
                   "1, @prefill) to this file and stop: hesper-opt can lower "
                   "them for any target"),
    llvm::cl::init(""), llvm::cl::cat(modelCategory));
static llvm::cl::opt<bool> chatMode(
    "chat",
    llvm::cl::desc("Conversation: read user turns from stdin, one per line, "
                   "and answer each with the model's chat template, keeping "
                   "the KV cache between turns (-p/-f: the system prompt)"),
    llvm::cl::init(false), llvm::cl::cat(modelCategory));
static llvm::cl::alias chatAlias("cnv", llvm::cl::aliasopt(chatMode),
                                 llvm::cl::cat(modelCategory));
static llvm::cl::opt<std::string> chatTemplate(
    "chat-template",
    llvm::cl::desc("Chat template to use instead of the file's: chatml, "
                   "llama3, gemma or phi3"),
    llvm::cl::init(""), llvm::cl::cat(modelCategory));
static llvm::cl::opt<bool> noDisplayPrompt(
    "no-display-prompt", llvm::cl::desc("Do not echo the prompt"),
    llvm::cl::init(false), llvm::cl::cat(modelCategory));

static llvm::cl::opt<bool> noCache(
    "no-cache",
    llvm::cl::desc("Compile the model's programs instead of loading them "
                   "from the program cache (and store nothing)"),
    llvm::cl::init(false), llvm::cl::cat(modelCategory));
static llvm::cl::opt<bool> cacheInfo(
    "cache-info",
    llvm::cl::desc("Print where the program cache is, its entries and "
                   "bytes, and its hits and misses, then exit"),
    llvm::cl::init(false), llvm::cl::cat(modelCategory));

bool hesper::run::cacheInfoAsked() { return cacheInfo; }

bool hesper::run::modelModeNeedsCompiler() {
  return !emitMlir.empty() || noCache;
}

int hesper::run::printCacheInfo(llvm::raw_ostream &os) {
  std::string dir = defaultProgramCacheDir();
  if (dir.empty()) {
    os << "program cache: none (set HESPER_CACHE_DIR, XDG_CACHE_HOME or "
          "HOME)\n";
    return 0;
  }
  ProgramCacheInfo info = programCacheInfo(dir);
  os << "program cache: " << info.dir << "\n"
     << "entries: " << info.entries << " ("
     << llvm::format("%.1f", info.bytes / (1024.0 * 1024.0)) << " MiB of "
     << llvm::format("%g", info.limitBytes / (1024.0 * 1024.0))
     << " MiB kept; HESPER_PROGRAM_CACHE_MAX_MB sets it)\n"
     << "hits: " << info.hits << ", misses: " << info.misses
     << ", evicted: " << info.evictions << "\n";
  return 0;
}

std::string hesper::run::modelPath(const std::string &positional) {
  if (!modelFlag.empty())
    return modelFlag;
  if (positional.empty())
    return "";
  if (llvm::StringRef(positional).ends_with_insensitive(".gguf"))
    return positional;
  std::ifstream in(positional, std::ios::binary);
  char magic[4] = {};
  if (in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0)
    return positional;
  return "";
}

/// This process's resident and peak resident memory in MiB (0 where
/// /proc/self/status does not say).
static std::pair<double, double> residentMiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  double now = 0, peak = 0;
  while (std::getline(in, line)) {
    llvm::StringRef l(line);
    double *out = l.starts_with("VmRSS:")   ? &now
                  : l.starts_with("VmHWM:") ? &peak
                                            : nullptr;
    unsigned long long kib = 0;
    if (out && !l.drop_front(6).trim().split(' ').first.getAsInteger(10, kib))
      *out = kib / 1024.0;
  }
  return {now, peak};
}

static int fail(const std::string &message) {
  llvm::outs().flush();
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

/// Parses "1,2,3" into ids; "" or an error message.
static std::string parseIds(llvm::StringRef text, std::vector<int32_t> &ids) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/true);
  for (llvm::StringRef p : parts) {
    int64_t v;
    if (p.trim().getAsInteger(10, v) || v < 0 || v > INT32_MAX)
      return "--tokens: '" + p.str() + "' is not a token id";
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty())
    return "--tokens: no token ids given";
  return "";
}

static std::string joinIds(const std::vector<int32_t> &ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

/// Device time per token by kernel (summed over layers: kernels with the
/// same name prefix before the last '_' are one kind), and the share of a
/// token's wall time spent outside the kernels.
/// A kernel's name after its graph and number ("decode_k7_"): its kind.
static llvm::StringRef kernelKind(llvm::StringRef name) {
  size_t at = name.find("_k");
  if (at == llvm::StringRef::npos)
    return name;
  llvm::StringRef rest = name.drop_front(at + 2);
  size_t digits = rest.find_first_not_of("0123456789");
  if (digits > 0 && digits != llvm::StringRef::npos && rest[digits] == '_')
    return rest.drop_front(digits + 1);
  return name;
}

/// "12.3 us, 4.56 MB at 370.7 GB/s (0.42 of copy)": a kernel's time and
/// the bytes it must move (its compulsory traffic) per step.
static std::string timeAndBandwidth(double us, double bytes, double copyGbps) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%8.1f", us) << " us";
  if (bytes <= 0)
    return out;
  double gbps = us > 0 ? bytes / (us * 1e3) : 0;
  os << llvm::format("  %8.3f MB %8.1f GB/s", bytes / 1e6, gbps);
  if (copyGbps > 0)
    os << llvm::format(" (%.2f of copy)", gbps / copyGbps);
  return out;
}

/// Where a step's time goes: per launch and per kind of kernel, the device
/// time and the bytes each must move at the least (LaunchTraffic) against
/// the device's copy bandwidth (`copyGbps`, 0 when not measured); for the
/// decode step, the token against the weights' bytes at that bandwidth.
static void printKernelTimes(const Session &s, bool chunks, double wallMs,
                             size_t steps, double copyGbps,
                             uint64_t weightBytes) {
  std::vector<double> totals = s.kernelTimeTotalsNs(chunks);
  std::vector<double> bytes = s.kernelByteTotals(chunks);
  std::vector<std::string> names = s.kernelNames(chunks);
  const char *what = chunks ? "prompt chunk" : "token";
  int64_t timed = s.timedTokens(chunks);
  if (totals.empty() || timed == 0) {
    if (!chunks)
      llvm::errs() << "kernel times: the device has no timestamps\n";
    return;
  }
  bytes.resize(totals.size(), 0.0);
  double perStep = 0, bytesPerStep = 0;
  struct Row {
    double us, bytes;
    std::string name;
  };
  std::vector<Row> rows;
  for (size_t k = 0; k < totals.size() && k < names.size(); ++k) {
    Row r{totals[k] / timed / 1000.0, bytes[k] / timed,
          std::to_string(k) + " " + names[k]};
    perStep += r.us;
    bytesPerStep += r.bytes;
    rows.push_back(std::move(r));
  }
  llvm::sort(rows, [](const Row &a, const Row &b) { return a.us > b.us; });
  llvm::errs() << "kernel time per " << what << ": "
               << llvm::format("%.1f", perStep / 1000.0) << " ms of "
               << llvm::format("%.1f", wallMs / steps) << " ms wall ("
               << llvm::format("%.1f", 100.0 * (1.0 - perStep / 1000.0 /
                                                          (wallMs / steps)))
               << "% outside the kernels)";
  if (bytesPerStep > 0) {
    llvm::errs() << "; " << llvm::format("%.2f", bytesPerStep / 1e6)
                 << " MB moved at "
                 << llvm::format("%.1f", bytesPerStep / (perStep * 1e3))
                 << " GB/s";
    if (copyGbps > 0)
      llvm::errs() << " (device copy "
                   << llvm::format("%.1f", copyGbps) << " GB/s)";
  }
  llvm::errs() << "; slowest launches:\n";
  for (size_t i = 0; i < rows.size() && i < 8; ++i)
    llvm::errs() << "  " << timeAndBandwidth(rows[i].us, rows[i].bytes,
                                             copyGbps)
                 << "  " << rows[i].name << "\n";
  // By kind: launches of every layer together.
  std::map<std::string, Row> kinds;
  std::map<std::string, int> counts;
  for (size_t k = 0; k < totals.size() && k < names.size(); ++k) {
    std::string kind = kernelKind(names[k]).str();
    Row &r = kinds[kind];
    r.us += totals[k] / timed / 1000.0;
    r.bytes += bytes[k] / timed;
    r.name = kind + " (" + std::to_string(++counts[kind]) + ")";
  }
  std::vector<Row> byKind;
  for (const auto &entry : kinds)
    byKind.push_back(entry.second);
  llvm::sort(byKind, [](const Row &a, const Row &b) { return a.us > b.us; });
  llvm::errs() << "  by kind (launches per " << what << "):\n";
  for (const Row &r : byKind)
    llvm::errs() << "  " << timeAndBandwidth(r.us, r.bytes, copyGbps) << "  "
                 << r.name << "\n";
  // A token's bound: its bytes (mostly the weights) moved once at the
  // device's copy bandwidth. (A prompt chunk's kernels do many operations
  // per byte: bandwidth is not their bound.)
  if (!chunks && copyGbps > 0 && bytesPerStep > 0 && perStep > 0) {
    double boundUs = bytesPerStep / (copyGbps * 1e3);
    llvm::errs() << "  bound: " << llvm::format("%.2f", bytesPerStep / 1e6)
                 << " MB a token (weights "
                 << llvm::format("%.2f", weightBytes / 1e6)
                 << " MB) at the device's copy bandwidth take "
                 << llvm::format("%.1f", boundUs) << " us; the kernels "
                 << llvm::format("%.1f", perStep) << " us ("
                 << llvm::format("%.2f", boundUs / perStep)
                 << " of the bound's speed)\n";
  }
}

/// `text` on one line: newlines and tabs escaped.
static std::string oneLine(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out;
}

/// --chat: a conversation on stdin, one user turn per line.
static int runChat(Session &s, const Model &model, const GenerateOptions &g,
                   const std::string &systemPrompt) {
  const Tokenizer *tok = model.tokenizer();
  if (!tok)
    return fail(model.file().path() + " has no tokenizer; --chat needs one");
  std::optional<ChatFormat> format;
  if (!chatTemplate.empty()) {
    format = chatFormatByName(chatTemplate);
    if (!format)
      return fail("--chat-template: unknown template '" + chatTemplate +
                  "' (known: " + chatFormatNames() + ")");
  } else {
    std::optional<std::string> text =
        model.file().getString("tokenizer.chat_template");
    if (!text)
      return fail(model.file().path() +
                  " has no tokenizer.chat_template; name one with "
                  "--chat-template (" + chatFormatNames() + ")");
    format = detectChatFormat(*text);
    if (!format)
      return fail(model.file().path() +
                  ": the chat template is none of the known ones (" +
                  chatFormatNames() + "); name one with --chat-template");
  }
  llvm::errs() << "chat template: " << chatFormatName(*format) << "\n";
  Conversation chat(s, *tok, *format, systemPrompt);
  const bool terminal = isatty(fileno(stdin));
  std::string line;
  for (int n = 1;; ++n) {
    if (terminal) {
      llvm::outs() << "> ";
      llvm::outs().flush();
    }
    if (!std::getline(std::cin, line))
      break;
    if (line.empty()) {
      --n;
      continue;
    }
    auto onToken = [&](int32_t id) {
      if (!printTokenIds && !tok->isEog(id)) {
        llvm::outs() << tok->decodeToken(id);
        llvm::outs().flush();
      }
      return true;
    };
    auto turn = chat.say(line, g, onToken);
    if (!turn)
      return fail(turn.status().message());
    if (printTokenIds) {
      llvm::outs() << "turn " << n << " prompt: "
                   << oneLine(tok->decode(turn->promptIds, true)) << "\n"
                   << "turn " << n << " prompt ids: "
                   << joinIds(turn->promptIds) << "\n"
                   << "turn " << n << " reused: " << turn->reusedTokens
                   << ", fed: "
                   << turn->promptIds.size() - turn->reusedTokens << "\n"
                   << "turn " << n << " generated ids: "
                   << joinIds(turn->result.generated) << "\n";
    } else {
      llvm::outs() << "\n";
    }
    llvm::outs().flush();
    const GenerateResult &r = turn->result;
    llvm::errs() << "turn " << n << ": " << turn->reusedTokens
                 << " tokens from the cache, "
                 << turn->promptIds.size() - turn->reusedTokens << " fed in "
                 << llvm::format("%.1f", r.promptMs) << " ms, "
                 << r.generated.size() << " generated ("
                 << llvm::format("%.1f", r.decodeMs > 0
                                             ? r.generated.size() /
                                                   (r.decodeMs / 1000.0)
                                             : 0.0)
                 << " tok/s)"
                 << (r.stoppedAtEnd ? ", end of turn" : "") << "\n";
  }
  return 0;
}

/// The sampling parameters from the flags, or an error naming the flag
/// whose value is out of range (llama.cpp's ranges, Sampler.h).
/// The --bench-* flags as a BenchSpec; "" or what is wrong with them.
static std::string benchSpecFromFlags(run::BenchSpec &spec) {
  if (!benchPrompt.empty())
    spec.prompts.assign(benchPrompt.begin(), benchPrompt.end());
  if (!benchGen.empty())
    spec.gens.assign(benchGen.begin(), benchGen.end());
  if (!benchDepth.empty())
    spec.depths.assign(benchDepth.begin(), benchDepth.end());
  spec.reps = benchReps;
  spec.json = benchOutput == "json";
  if (benchReps < 1)
    return "--bench-reps takes a count of at least 1";
  if (benchOutput != "md" && benchOutput != "json")
    return "--bench-output is md or json, not '" + benchOutput + "'";
  for (int64_t n :
       llvm::concat<const int64_t>(spec.prompts, spec.gens, spec.depths))
    if (n < 0)
      return "--bench-prompt, --bench-gen and --bench-depth take counts of "
             "at least 0";
  return "";
}

static std::string samplerFromFlags(SamplerParams &p) {
  p.temperature = temperature;
  p.topK = topK;
  p.topP = topP;
  p.minP = minP;
  p.repeatPenalty = repeatPenalty;
  p.repeatLastN = repeatLastN;
  p.seed = seed >= 0 ? static_cast<uint32_t>(seed)
                     : static_cast<uint32_t>(std::chrono::steady_clock::now()
                                                 .time_since_epoch()
                                                 .count());
  if (std::optional<SamplerParamError> e = checkSamplerParams(p)) {
    static const std::pair<llvm::StringRef, llvm::StringRef> kFlags[] = {
        {"temperature", "--temp"},
        {"top_k", "--top-k"},
        {"top_p", "--top-p"},
        {"min_p", "--min-p"},
        {"repeat_penalty", "--repeat-penalty"},
        {"repeat_last_n", "--repeat-last-n"}};
    llvm::StringRef flag = e->param;
    for (auto [param, name] : kFlags)
      if (param == e->param)
        flag = name;
    return (flag + ": " + e->message).str();
  }
  if (seed < -1 || seed > UINT32_MAX)
    return "--seed must be -1 (from the clock) or between 0 and " +
           std::to_string(UINT32_MAX) + ", got " + std::to_string(seed);
  if (nPredict < -1)
    return "-n/--n-predict must be -1 (until the end of generation) or "
           "at least 0, got " +
           std::to_string(nPredict);
  return "";
}

int hesper::run::runModelMode(const std::string &path,
                              const exec::DeviceModeOptions &opts,
                              bool interpreter, const ModelModeHooks &hooks) {
  // Flags first: a bad value is refused before the model is loaded.
  SamplerParams sampler;
  if (std::string e = samplerFromFlags(sampler); !e.empty())
    return fail(e);
  run::BenchSpec spec;
  if (benchFlag)
    if (std::string e = benchSpecFromFlags(spec); !e.empty())
      return fail(e);
  if (tokenIds.getNumOccurrences() && tokenIds.empty())
    return fail("--tokens: no token ids given");
  if (chatTemplate.getNumOccurrences() && chatTemplate.empty())
    return fail(std::string("--chat-template: give a template name (") +
                chatFormatNames() + ")");
  if (batchSize < 0)
    return fail("-b/--batch-size must not be negative");
  CacheTypes cacheTypes;
  if (std::string e = parseCacheTypes(cacheTypeK, cacheTypeV, cacheTypes);
      !e.empty())
    return fail(e);
  if (ctxSize < 0)
    return fail("-c/--ctx-size must not be negative");
  auto loaded = Model::load(path);
  if (!loaded)
    return fail(loaded.status().message());
  Model &model = **loaded;
  const LlamaHParams &hp = model.hparams();
  const Tokenizer *tok = model.tokenizer();

  if (!emitMlir.empty()) {
    int64_t ctx = ctxSize > 0 ? int64_t(ctxSize) : hp.defaultContextSize();
    GraphOptions graphOptions(cacheTypes);
    graphOptions.quantizedActivations =
        quantizeActivations == llvm::cl::BOU_TRUE;
    int64_t chunk = batchSize ? int64_t(batchSize) : defaultBatchSize(nullptr);
    return hooks.emitGraphs(model, ctx, std::min<int64_t>(chunk, ctx),
                            graphOptions, emitMlir);
  }

  // The prompt, as ids.
  std::vector<int32_t> prompt;
  std::string promptText = promptFlag;
  if (!promptFile.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(promptFile);
    if (!buffer)
      return fail("cannot read " + promptFile + ": " +
                  buffer.getError().message());
    promptText = (*buffer)->getBuffer().str();
  }
  if (chatMode) {
    if (!tokenIds.empty())
      return fail("--chat takes its turns from stdin, not --tokens");
    if (!dumpLogits.empty())
      return fail("--chat does not write --dump-logits");
  } else if (benchFlag) {
    // The tests draw their own tokens.
  } else if (!tokenIds.empty()) {
    if (std::string e = parseIds(tokenIds, prompt); !e.empty())
      return fail(e);
    for (int32_t id : prompt)
      if (id >= hp.vocab)
        return fail("--tokens: id " + std::to_string(id) +
                    " is outside the vocabulary of " +
                    std::to_string(hp.vocab));
  } else {
    if (!tok)
      return fail(path + " has no tokenizer; give the prompt as --tokens");
    prompt = tok->encode(promptText, /*addSpecial=*/true);
    if (prompt.empty())
      return fail("the prompt is empty; give one with -p or -f");
  }

  // The device.
  std::unique_ptr<rt::Device> device;
  if (!interpreter) {
    device = exec::openRequestedDevice(opts);
    if (!device && opts.backend)
      return 1; // openRequestedDevice printed why
  }
  SessionOptions sessionOptions;
  sessionOptions.contextSize = ctxSize;
  sessionOptions.fuse = opts.fuse;
  sessionOptions.dumpDir = opts.dumpDir;
  sessionOptions.timing = kernelTimes;
  sessionOptions.batchSize = batchSize;
  sessionOptions.matrixUnits = opts.matrixUnits;
  sessionOptions.allLogits = !dumpLogits.empty();
  sessionOptions.programCache = !noCache;
  sessionOptions.cacheTypes = cacheTypes;
  if (quantizeActivations != llvm::cl::BOU_UNSET)
    sessionOptions.quantizedActivations =
        quantizeActivations == llvm::cl::BOU_TRUE;
  auto session = hooks.openSession(model, device.get(), sessionOptions);
  if (!session)
    return fail(session.status().message());
  Session &s = **session;
  if (!noWarmup)
    if (rt::Status st = s.warmUp(); !st)
      return fail(st.message());
  const SessionStats &stats = s.stats();
  llvm::errs() << "model: " << path << " (" << hp.arch << ", "
               << hp.layers << " layers, dim " << hp.dim << ", "
               << llvm::format("%.1f", hp.parameterCount() / 1e6)
               << "M parameters, " << hp.vocab << " tokens)\n";
  llvm::errs() << "device: "
               << (device ? device->info().name + " (" +
                                rt::backendName(device->info().backend) + ")"
                          : std::string("reference interpreter"))
               << "; context " << s.contextSize() << "; "
               << (stats.quantizedInputs > 0 ? "q8_1 activations; " : "")
               << (stats.programCache == "hit" ? "loaded from the program "
                                                 "cache in "
                                               : "compiled in ")
               << llvm::format("%.0f", stats.compileMs) << " ms; "
               << (stats.inPlaceWeightBytes &&
                           stats.inPlaceWeightBytes == stats.weightBufferBytes
                       ? "weights read in place from the file, buffers set "
                         "up in "
                       : "weights uploaded in ")
               << llvm::format("%.0f", stats.uploadMs) << " ms";
  if (stats.warmUpMs > 0)
    llvm::errs() << "; warmed up in " << llvm::format("%.0f", stats.warmUpMs)
                 << " ms";
  llvm::errs() << "\n";
  if (!opts.profilePath.empty()) {
    // Where the start went: the compile's stages (or the cache's load).
    exec::ChromeTrace trace;
    for (const SessionStats::Stage &stage : stats.compileStages)
      trace.add(stage.name, "compile", stage.startUs, stage.durationUs, 1);
    if (!trace.write(opts.profilePath))
      return fail("cannot write " + opts.profilePath);
  }
  if (!stats.programCacheWarning.empty())
    llvm::errs() << "warning: program cache: " << stats.programCacheWarning
                 << "\n";
  if (!stats.programCache.empty())
    llvm::errs() << "program cache: " << stats.programCache << " ("
                 << stats.programCachePath << ")\n";

  if (benchFlag)
    return run::runBench(
        s, model, path,
        device ? rt::backendName(device->info().backend) : "interp", spec,
        llvm::outs(), llvm::errs());

  GenerateOptions g;
  g.maxTokens = nPredict;
  g.stopAtEndOfGeneration = !ignoreEos;
  g.keepLogits = !dumpLogits.empty();
  g.sampler = sampler;

  if (chatMode)
    return runChat(s, model, g, promptText);

  if (static_cast<int64_t>(prompt.size()) > s.contextSize())
    return fail("the prompt has " + std::to_string(prompt.size()) +
                " tokens, more than the context of " +
                std::to_string(s.contextSize()) + " (-c/--ctx-size)");
  if (printTokenIds)
    llvm::outs() << "prompt ids: " << joinIds(prompt) << "\n";
  if (tok && !noDisplayPrompt && tokenIds.empty())
    llvm::outs() << tok->decode(prompt);
  llvm::outs().flush();
  auto onToken = [&](int32_t id) {
    if (tok && !printTokenIds) {
      llvm::outs() << tok->decodeToken(id);
      llvm::outs().flush();
    }
    return true;
  };
  auto isEnd = [&](int32_t id) { return tok && tok->isEog(id); };
  auto result = generate(s, prompt, g, onToken, isEnd);
  if (!result)
    return fail(result.status().message());
  if (printTokenIds)
    llvm::outs() << "generated ids: " << joinIds(result->generated) << "\n";
  else
    llvm::outs() << "\n";
  llvm::outs().flush();

  if (!dumpLogits.empty()) {
    rt::NpyArray array;
    array.dtype = rt::DType::F32;
    array.shape = {static_cast<int64_t>(result->logits.size()), hp.vocab};
    array.data.resize(result->logits.size() * hp.vocab * sizeof(float));
    for (size_t r = 0; r < result->logits.size(); ++r)
      std::memcpy(array.data.data() + r * hp.vocab * sizeof(float),
                  result->logits[r].data(), hp.vocab * sizeof(float));
    if (rt::Status st = rt::writeNpy(dumpLogits, array); !st)
      return fail(st.message());
  }

  size_t decoded = result->generated.size();
  double promptRate = result->promptTokens / (result->promptMs / 1000.0);
  double decodeRate = decoded / (result->decodeMs / 1000.0);
  llvm::errs() << "prompt: " << result->promptTokens << " tokens in "
               << llvm::format("%.1f", result->promptMs) << " ms ("
               << llvm::format("%.1f", promptRate) << " tok/s)";
  if (!stats.chunkRuns.empty()) {
    // Largest chunks first: "chunks of 32 x 16, 8 x 2".
    llvm::errs() << ", chunks of ";
    llvm::interleave(
        llvm::reverse(stats.chunkRuns), llvm::errs(),
        [](const auto &run) {
          llvm::errs() << run.first << " x " << run.second;
        },
        ", ");
  }
  llvm::errs() << "\n"
               << "decode: " << decoded << " tokens in "
               << llvm::format("%.1f", result->decodeMs) << " ms ("
               << llvm::format("%.1f", decodeRate) << " tok/s)"
               << (result->stoppedAtEnd ? ", stopped at end of generation"
                                        : "")
               << "\n"
               << "kernels per token: " << stats.kernelsPerToken << " ("
               << (device ? std::to_string(stats.distinctKernels) +
                                " distinct, "
                          : std::string())
               << stats.dispatchOpsUnfused << " primitives before fusion, "
               << hp.layers << " layers)";
  if (s.batchSize() > 1) {
    llvm::errs() << "; " << stats.kernelsPerChunk << " per prompt chunk of "
                 << s.batchSize() << " tokens";
    std::vector<int64_t> tails = s.tailChunkRowCounts();
    if (!tails.empty()) {
      llvm::errs() << " (a prompt's tail in chunks of ";
      llvm::interleave(tails, llvm::errs(), " or ");
      llvm::errs() << ")";
    }
  }
  llvm::errs() << "\n"
               << "device memory: "
               << llvm::format("%.1f", stats.deviceBytes / 1048576.0)
               << " MiB (weights "
               << llvm::format("%.1f", model.weightBytes() / 1048576.0)
               << " MiB";
  if (stats.inPlaceWeightBytes)
    llvm::errs() << " of which "
                 << llvm::format("%.1f", stats.inPlaceWeightBytes / 1048576.0)
                 << " MiB read in place from the file's mapping";
  if (stats.cacheBytes)
    llvm::errs() << ", KV cache "
                 << llvm::format("%.1f", stats.cacheBytes / 1048576.0)
                 << " MiB, activations and scratch "
                 << llvm::format("%.1f", (stats.deviceBytes -
                                          stats.weightBufferBytes -
                                          stats.cacheBytes) /
                                             1048576.0)
                 << " MiB";
  llvm::errs() << ")\n";
  if (auto [now, peak] = residentMiB(); peak > 0)
    llvm::errs() << "resident memory: " << llvm::format("%.1f", now)
                 << " MiB, peak " << llvm::format("%.1f", peak) << " MiB\n";
  if (kernelTimes) {
    // The device's copy bandwidth, which every kernel's GB/s is set
    // against (after the run: the copy's buffers are not resident during
    // it).
    double copyGbps = 0;
    if (device) {
      auto measured = rt::measureCopyGbps(
          *device, rt::copyBandwidthBytes(device->info()));
      if (measured)
        copyGbps = *measured;
      else
        llvm::errs() << "warning: measuring the device's copy bandwidth: "
                     << measured.status().message() << "\n";
    }
    // Decode steps: the generated tokens but the last (which is not fed).
    size_t steps = decoded > 1 ? decoded - 1 : 1;
    printKernelTimes(s, /*chunks=*/false, result->decodeMs, steps, copyGbps,
                     model.weightBytes());
    int64_t chunks = s.timedTokens(/*chunks=*/true);
    if (chunks)
      printKernelTimes(s, /*chunks=*/true, result->promptMs, chunks, copyGbps,
                       model.weightBytes());
  }
  return 0;
}
