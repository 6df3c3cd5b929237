//===- hesper-server.cpp - An OpenAI-compatible server for GGUF models ----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-server -m model.gguf [--host 127.0.0.1] [--port 8080] [-np 4] ...
//
// Flags as llama-server spells them; the serving itself is library code
// (Hesper/Serving). docs/Server.md.
//
//===----------------------------------------------------------------------===//

#include "CrashWatchdog.h"
#include "ToolFlags.h"

#include "Hesper/Models/Chat.h"
#include "Hesper/Models/Model.h"
#include "Hesper/Serving/Server.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstdlib>
#include <mutex>
#include <pthread.h>
#include <thread>

using namespace hesper;
namespace cl = llvm::cl;

static cl::OptionCategory serverCategory("hesper-server");

static cl::opt<std::string> modelPath("m", cl::desc("The GGUF model file"),
                                      cl::value_desc("model.gguf"),
                                      cl::cat(serverCategory));
static cl::alias modelAlias("model", cl::aliasopt(modelPath),
                            cl::desc("Alias for -m"));
static cl::opt<std::string>
    modelName("alias",
              cl::desc("The model's name in the API (default: the file name "
                       "without .gguf)"),
              cl::cat(serverCategory));
static cl::alias modelNameAlias("a", cl::aliasopt(modelName),
                                cl::desc("Alias for --alias"));
static cl::opt<std::string> host("host",
                                 cl::desc("Address to listen on"),
                                 cl::init("127.0.0.1"),
                                 cl::cat(serverCategory));
static cl::opt<int> port("port",
                         cl::desc("Port to listen on (0: any free port)"),
                         cl::init(8080), cl::cat(serverCategory));
static cl::opt<int64_t> ctxSize("c",
                                cl::desc("Context (positions) of each slot "
                                         "(0: the model's, capped at 4096)"),
                                cl::init(0), cl::cat(serverCategory));
static cl::alias ctxAlias("ctx-size", cl::aliasopt(ctxSize),
                          cl::desc("Alias for -c"));
static cl::opt<std::string> cacheTypeK(
    "ctk", cl::desc("KV cache type of K: f16 (default, as llama.cpp), f32 or q8_0"),
    cl::init("f16"), cl::cat(serverCategory));
static cl::alias cacheTypeKAlias("cache-type-k", cl::aliasopt(cacheTypeK),
                                 cl::desc("Alias for -ctk"));
static cl::opt<std::string> cacheTypeV(
    "ctv", cl::desc("KV cache type of V: f16 (default, as llama.cpp), f32 or q8_0"),
    cl::init("f16"), cl::cat(serverCategory));
static cl::alias cacheTypeVAlias("cache-type-v", cl::aliasopt(cacheTypeV),
                                 cl::desc("Alias for -ctv"));
static cl::opt<cl::boolOrDefault> quantizeActivations(
    "quantize-activations",
    cl::desc("Quantize the input of every q8_0/q4_0/q4_k projection (q6_k "
             "in one-token steps; q2_k, i2_s and tq2_0) to "
             "q8_1 and multiply bytes in integers, as llama.cpp's CPU "
             "backend does (=false: f32 input, exact products; default: on "
             "for the CPU target, off elsewhere)"),
    cl::cat(serverCategory));
static cl::opt<int> parallel("np",
                             cl::desc("Slots: sequences generated at once"),
                             cl::init(4), cl::cat(serverCategory));
static cl::alias parallelAlias("parallel", cl::aliasopt(parallel),
                               cl::desc("Alias for -np"));
static cl::opt<int> queueSize(
    "queue",
    cl::desc("Requests that may wait for a slot; more get 503 (default 64)"),
    cl::init(64), cl::cat(serverCategory));
static cl::opt<int64_t> batchSize(
    "b", cl::desc("Tokens per prompt chunk (llama.cpp's -b)"), cl::init(32),
    cl::cat(serverCategory));
static cl::alias batchAlias("batch-size", cl::aliasopt(batchSize),
                            cl::desc("Alias for -b"));
static cl::opt<int> nPredict(
    "n",
    cl::desc("Default tokens to generate when a request gives no max_tokens "
             "(-1: until the context is full)"),
    cl::init(-1), cl::cat(serverCategory));
static cl::alias nPredictAlias("n-predict", cl::aliasopt(nPredict),
                               cl::desc("Alias for -n"));
static cl::opt<tools::BackendFlag> backend("backend",
                                           cl::desc("Where the model runs"),
                                           tools::backendFlagValues(),
                                           cl::init(tools::BackendFlag::Auto),
                                           cl::cat(serverCategory));
static cl::opt<int> deviceIndex(
    "device", cl::desc("Device index of the backend (--list-devices)"),
    cl::init(-1), cl::cat(serverCategory));
// Spelled --threads or -t on the command line (renameThreadsFlag).
static cl::opt<unsigned> threads(
    "cpu-threads",
    cl::desc("Threads of the CPU backend, also --threads N or -t N (0: the "
             "cores available)"),
    cl::init(0), cl::cat(serverCategory));
static cl::opt<std::string> apiKey(
    "api-key",
    cl::desc("Key the clients must send (Authorization: Bearer KEY); also "
             "HESPER_API_KEY"),
    cl::cat(serverCategory));
static cl::opt<std::string> chatTemplate(
    "chat-template",
    cl::desc("Chat template: chatml, llama3, gemma or phi3 (default: from "
             "the file's tokenizer.chat_template)"),
    cl::cat(serverCategory));
static cl::opt<int> timeoutSeconds(
    "timeout", cl::desc("Read/write timeout of a connection, in seconds"),
    cl::init(600), cl::cat(serverCategory));
static cl::opt<unsigned> maxBodyKiB(
    "max-body-kib", cl::desc("Largest request body, in KiB (default 8192)"),
    cl::init(8192), cl::cat(serverCategory));
static cl::opt<bool> batchInvariant(
    "batch-invariant",
    cl::desc("Run every step on the same row tiles, so a request's logits "
             "are bit-identical alone or beside others (a lone stream "
             "decodes slower on the CPU target)"),
    cl::cat(serverCategory));
static cl::opt<bool> noCache(
    "no-cache",
    cl::desc("Compile the model's programs instead of loading them from the "
             "program cache (and store nothing)"),
    cl::cat(serverCategory));
static cl::opt<bool> noWarmup(
    "no-warmup",
    cl::desc("Do not run a token through the model before serving (as "
             "llama-server's --no-warmup)"),
    cl::cat(serverCategory));
static cl::opt<bool> listDevicesFlag("list-devices",
                                     cl::desc("List the devices and exit"),
                                     cl::cat(serverCategory));

static int fail(const std::string &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

/// Prints one line to stderr, whole, whichever thread calls.
static void logLine(const std::string &line) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  llvm::errs() << line << "\n";
  llvm::errs().flush();
}

int main(int argc, char **argv) {
  tools::armCrashWatchdog();
  llvm::InitLLVM init(argc, argv);
  tools::hideOptionsOutside({"hesper-server"});
  std::vector<std::string> renamed;
  tools::renameThreadsFlag(argc, argv, renamed);
  cl::ParseCommandLineOptions(
      argc, argv,
      "hesper-server: an OpenAI-compatible HTTP server for a GGUF model "
      "(/v1/chat/completions, /v1/completions, a chat page at /)\n");
  if (listDevicesFlag) {
    tools::listAllDevices(llvm::outs());
    return 0;
  }
  // Flags first, before the model is loaded.
  if (modelPath.empty())
    return fail("give the model with -m model.gguf");
  if (port < 0 || port > 65535)
    return fail("--port must be between 0 and 65535, got " +
                std::to_string(port));
  if (parallel < 1 || parallel > 256)
    return fail("-np/--parallel must be between 1 and 256, got " +
                std::to_string(parallel));
  if (queueSize < 0)
    return fail("--queue must not be negative");
  if (ctxSize < 0)
    return fail("-c/--ctx-size must not be negative");
  models::CacheTypes cacheTypes;
  if (std::string e =
          models::parseCacheTypes(cacheTypeK, cacheTypeV, cacheTypes);
      !e.empty())
    return fail(e);
  if (batchSize < 1)
    return fail("-b/--batch-size must be at least 1");
  if (nPredict < -1 || nPredict == 0)
    return fail("-n/--n-predict must be at least 1, or -1 (until the context "
                "is full)");
  if (timeoutSeconds < 1)
    return fail("--timeout must be at least 1 second");
  if (maxBodyKiB < 1)
    return fail("--max-body-kib must be at least 1");
  if (deviceIndex.getNumOccurrences() && deviceIndex < 0)
    return fail("--device takes an index from --list-devices (0 or more)");
  std::optional<models::ChatFormat> format;
  if (chatTemplate.getNumOccurrences()) {
    format = models::chatFormatByName(chatTemplate);
    if (!format)
      return fail("--chat-template: unknown template '" + chatTemplate +
                  "' (" + models::chatFormatNames() + ")");
  }
  std::string key = apiKey;
  if (key.empty())
    if (const char *env = std::getenv("HESPER_API_KEY"))
      key = env;

  // SIGINT and SIGTERM go to one thread that stops the server: they are
  // blocked here, before any other thread exists (the device's workers, the
  // engine, the HTTP pool), so every thread inherits the mask. A client that
  // goes away must not end the process with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  auto loaded = models::Model::load(modelPath);
  if (!loaded)
    return fail(loaded.status().message());
  const models::Model &model = **loaded;
  const models::LlamaHParams &hp = model.hparams();
  if (!format && model.tokenizer()) {
    if (auto text = model.file().getString("tokenizer.chat_template"))
      format = models::detectChatFormat(*text);
  }

  std::unique_ptr<rt::Device> device =
      tools::openFlaggedDevice(backend, deviceIndex, threads);
  if (!device)
    return fail("no device to run the model on (--list-devices)");

  serving::EngineOptions engineOptions;
  engineOptions.slots = parallel;
  engineOptions.queueSize = queueSize;
  engineOptions.warmup = !noWarmup;
  engineOptions.session.contextSize = ctxSize;
  engineOptions.session.cacheTypes = cacheTypes;
  if (quantizeActivations != cl::BOU_UNSET)
    engineOptions.session.quantizedActivations =
        quantizeActivations == cl::BOU_TRUE;
  engineOptions.session.batchSize = batchSize;
  engineOptions.session.batchInvariant = batchInvariant;
  engineOptions.session.programCache = !noCache;
  auto engine = serving::Engine::create(model, device.get(), engineOptions);
  if (!engine)
    return fail(engine.status().message());

  serving::ApiContext api;
  api.tokenizer = model.tokenizer();
  api.chatFormat = format;
  api.modelId = modelName.empty()
                    ? llvm::sys::path::stem(modelPath).str()
                    : std::string(modelName);
  api.vocab = hp.vocab;
  api.contextSize = (*engine)->contextSize();
  api.defaultMaxTokens = nPredict;

  serving::ServerOptions options;
  options.host = host;
  options.port = port;
  options.apiKey = key;
  options.maxBodyBytes = size_t(maxBodyKiB) * 1024;
  options.timeoutSeconds = timeoutSeconds;
  options.log = logLine;
  options.parameters = hp.parameterCount();
  options.arch = hp.arch;

  serving::Server server(**engine, api, options);
  auto bound = server.bind();
  if (!bound)
    return fail(bound.status().message());
  const models::SessionStats &stats = (*engine)->sessionStats();
  llvm::errs() << "model: " << modelPath << " (" << hp.arch << ", "
               << llvm::format("%.1f", hp.parameterCount() / 1e6)
               << "M parameters) as '" << api.modelId << "'\n";
  llvm::errs() << "device: " << device->info().name << " ("
               << rt::backendName(device->info().backend) << "); " << parallel
               << " slots of " << api.contextSize << " positions; chat "
               << (format ? models::chatFormatName(*format) : "none")
               << (stats.programCache == "hit"
                       ? "; loaded from the program cache in "
                       : "; compiled in ")
               << llvm::format("%.0f", stats.compileMs) << " ms\n";
  if (!stats.programCacheWarning.empty())
    llvm::errs() << "warning: program cache: " << stats.programCacheWarning
                 << "\n";
  // One write: a client that reads the log as it comes must not see the
  // address without its port (llvm::errs() writes each piece at once).
  llvm::errs() << ("listening on http://" + host.getValue() + ":" +
                   std::to_string(*bound) + "\n");
  llvm::errs().flush();

  std::thread stopper([&server, stopSignals] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    logLine(std::string("received ") +
            (signal == SIGINT ? "SIGINT" : "SIGTERM") + ", shutting down");
    server.stop();
  });
  bool ok = server.run();
  if (!ok) {
    // The listener failed on its own: wake the signal thread to end it.
    pthread_kill(stopper.native_handle(), SIGTERM);
  }
  stopper.join();
  logLine("stopped");
  return ok ? 0 : 1;
}
