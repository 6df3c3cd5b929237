//===- hesper-train.cpp - Train a small transformer on a text file --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-train corpus.txt [--preset tiny] [--steps N] [-o model.gguf]
//
// Trains a byte-level decoder-only transformer of the llama architecture on
// a text file (lib/Models/Trainer: the step is one Circuit graph, its
// gradients derived by circuit-autodiff), prints the loss, the learning
// rate, tokens/s and the time per step, saves and resumes checkpoints, and
// writes the model as a GGUF file that hesper-run generates text from.
//
//===----------------------------------------------------------------------===//

#include "CrashWatchdog.h"
#include "Hesper/Execution/GraphRun.h"
#include "ToolFlags.h"
#include "Hesper/InitAllDialects.h"
#include "Hesper/Models/Trainer.h"

#include "hesper/runtime/Npy.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstring>
#include <cmath>
#include <unistd.h>

using namespace llvm;
using namespace hesper;

static cl::OptionCategory dataCategory("Data and model");
static cl::OptionCategory optCategory("Optimizer");
static cl::OptionCategory runCategory("Running");

static cl::opt<std::string> corpusPath(cl::Positional,
                                       cl::desc("<corpus.txt>"),
                                       cl::cat(dataCategory));
enum class Preset { Tiny, Small };
static cl::opt<Preset> preset(
    "preset", cl::desc("Model size"), cl::init(Preset::Tiny),
    cl::values(clEnumValN(Preset::Tiny, "tiny",
                          "HLX's Tiny: width 256, 4 layers, 4 heads, FFN "
                          "1024, sequence 128 (3.3M parameters)"),
               clEnumValN(Preset::Small, "small",
                          "for tests: width 32, 2 layers, 2 heads, FFN 64, "
                          "sequence 32")),
    cl::cat(dataCategory));
static cl::opt<int64_t> dimFlag("dim", cl::desc("Model width (overrides "
                                                "the preset)"),
                                cl::init(0), cl::cat(dataCategory));
static cl::opt<int64_t> layersFlag("layers", cl::desc("Layers"), cl::init(0),
                                   cl::cat(dataCategory));
static cl::opt<int64_t> headsFlag("heads", cl::desc("Attention heads"),
                                  cl::init(0), cl::cat(dataCategory));
static cl::opt<int64_t> ffnFlag("ffn", cl::desc("Feed-forward width"),
                                cl::init(0), cl::cat(dataCategory));
static cl::opt<int64_t> seqFlag("seq", cl::desc("Tokens (bytes) per step"),
                                cl::init(0), cl::cat(dataCategory));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed of the weights and batches"),
                              cl::init(1), cl::cat(dataCategory));

static cl::opt<int64_t> steps("steps", cl::desc("Steps to train (the "
                                                "schedule ends there)"),
                              cl::init(1000), cl::cat(optCategory));
static cl::opt<double> lr("lr", cl::desc("Peak learning rate"),
                          cl::init(1e-3), cl::cat(optCategory));
static cl::opt<double> minLr("min-lr",
                             cl::desc("Learning rate at the last step"),
                             cl::init(1e-4), cl::cat(optCategory));
static cl::opt<int64_t> warmup("warmup", cl::desc("Warmup steps"),
                               cl::init(100), cl::cat(optCategory));
static cl::opt<double> beta1("beta1", cl::init(0.9), cl::desc("AdamW β1"),
                             cl::cat(optCategory));
static cl::opt<double> beta2("beta2", cl::init(0.999), cl::desc("AdamW β2"),
                             cl::cat(optCategory));
static cl::opt<double> adamEps("adam-eps", cl::init(1e-8),
                               cl::desc("AdamW ε (outside the square root)"),
                               cl::cat(optCategory));
static cl::opt<double> weightDecay("weight-decay", cl::init(0.0),
                                   cl::desc("AdamW weight decay (0: Adam)"),
                                   cl::cat(optCategory));
static cl::opt<double> clip("clip", cl::init(1.0),
                            cl::desc("Clip gradients to this global norm "
                                     "(0: off)"),
                            cl::cat(optCategory));

static cl::opt<tools::BackendFlag>
    backend("backend", cl::desc("Where the steps run"),
            cl::init(tools::BackendFlag::Auto), tools::backendFlagValues(),
            cl::cat(runCategory));
static cl::opt<unsigned> threads("cpu-threads",
                                 cl::desc("CPU backend threads, also -t N (0: all "
                                          "cores)"),
                                 cl::init(0), cl::cat(runCategory));
static cl::alias threadsAlias("t", cl::aliasopt(threads),
                              cl::desc("Alias of --threads"));
static cl::opt<int> deviceIndex("device", cl::desc("Device index"),
                                cl::init(-1), cl::cat(runCategory));
static cl::opt<bool> validation("validation",
                                cl::desc("Vulkan validation layer on"),
                                cl::cat(runCategory));
static cl::opt<std::string> outputPath("o",
                                       cl::desc("Write the trained model "
                                                "(GGUF) here"),
                                       cl::value_desc("model.gguf"),
                                       cl::cat(runCategory));
static cl::opt<std::string> checkpointPath(
    "checkpoint", cl::desc("Save a checkpoint (weights, AdamW moments, "
                           "step) here, every --checkpoint-every steps "
                           "and at the end"),
    cl::cat(runCategory));
static cl::opt<int64_t> checkpointEvery("checkpoint-every", cl::init(0),
                                        cl::desc("Steps between "
                                                 "checkpoints (0: at the "
                                                 "end only)"),
                                        cl::cat(runCategory));
static cl::opt<std::string> resumePath("resume",
                                       cl::desc("Continue from a "
                                                "checkpoint"),
                                       cl::cat(runCategory));
static cl::opt<int64_t> stopAfter("stop-at", cl::init(0),
                                  cl::desc("Stop after this step (to "
                                           "resume later; 0: --steps)"),
                                  cl::cat(runCategory));
static cl::opt<int64_t> logEvery("log-every", cl::init(10),
                                 cl::desc("Print a line every N steps"),
                                 cl::cat(runCategory));
static cl::opt<bool> printLosses("print-losses",
                                 cl::desc("Print every step's loss with "
                                          "all its digits"),
                                 cl::cat(runCategory));
static cl::opt<std::string> dumpLogits(
    "dump-logits",
    cl::desc("At the end, write the logits of --logits-text (its first "
             "--seq bytes) as .npy [seq, 256]"),
    cl::cat(runCategory));
static cl::opt<std::string> logitsText("logits-text",
                                       cl::desc("Text for --dump-logits"),
                                       cl::cat(runCategory));
static cl::opt<std::string> emitMlir(
    "emit-mlir",
    cl::desc("Write the training graphs (@loss, @loss_grad, @logits, "
             "@train_step) to this file and stop: hesper-opt and hesper-run "
             "take them"),
    cl::cat(runCategory));
static cl::opt<bool> noFuse("no-fuse", cl::desc("Skip hesper-fuse"),
                            cl::cat(runCategory));
static cl::opt<std::string> dumpDir("dump-dir",
                                    cl::desc("Write every compile stage's "
                                             "IR here"),
                                    cl::cat(runCategory));

static int fail(const Twine &message) {
  errs() << "error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  tools::armCrashWatchdog();
  InitLLVM init(argc, argv);
  tools::hideOptionsOutside({dataCategory.getName(), optCategory.getName(),
                            runCategory.getName()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "hesper-train: train a byte-level llama-architecture transformer on a "
      "text file and write it as GGUF\n");

  if (corpusPath.empty())
    return fail("give a text file to train on (hesper-train corpus.txt)");
  auto corpus = MemoryBuffer::getFile(corpusPath, /*IsText=*/false);
  if (!corpus)
    return fail(corpusPath + ": " + corpus.getError().message());

  train::TrainerOptions options;
  train::ModelShape &shape = options.shape;
  if (preset == Preset::Small) {
    shape.dim = 32;
    shape.layers = 2;
    shape.heads = 2;
    shape.ffn = 64;
    shape.seq = 32;
  }
  for (auto [flag, field] :
       {std::pair{&dimFlag, &shape.dim}, {&layersFlag, &shape.layers},
        {&headsFlag, &shape.heads}, {&ffnFlag, &shape.ffn},
        {&seqFlag, &shape.seq}})
    if (flag->getNumOccurrences())
      *field = *flag;
  if (steps < 1)
    return fail("--steps takes a count of at least 1");
  if (warmup < 1)
    return fail("--warmup takes a count of at least 1");
  if (logEvery < 1)
    return fail("--log-every takes a count of at least 1");
  if (stopAfter < 0 || stopAfter > steps)
    return fail("--stop-at takes a step between 1 and --steps (" +
                std::to_string(steps) + "), or 0 for --steps, got " +
                std::to_string(stopAfter));
  if (checkpointEvery < 0)
    return fail("--checkpoint-every takes a count of steps (0: at the end "
                "only), got " +
                std::to_string(checkpointEvery));
  if (!(lr > 0) || minLr < 0 || !(beta1 >= 0 && beta1 < 1) ||
      !(beta2 >= 0 && beta2 < 1) || !(adamEps > 0) || clip < 0)
    return fail("the optimizer needs --lr > 0, --min-lr >= 0, betas in "
                "[0, 1), --adam-eps > 0 and --clip >= 0");
  if (!dumpLogits.empty() && logitsText.empty())
    return fail("--dump-logits needs --logits-text");
  options.seed = seed;
  options.fuse = !noFuse;
  options.dumpDir = dumpDir;
  train::OptimizerConfig &o = options.optimizer;
  o.lr = lr;
  o.minLr = minLr;
  o.warmup = warmup;
  o.totalSteps = steps;
  o.beta1 = beta1;
  o.beta2 = beta2;
  o.eps = adamEps;
  o.weightDecay = weightDecay;
  o.clipNorm = clip;
  if (std::string problem = train::checkShape(shape); !problem.empty())
    return fail("model shape: " + problem);

  if (!emitMlir.empty()) {
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    mlir::MLIRContext context(registry);
    context.loadAllAvailableDialects();
    mlir::OwningOpRef<mlir::ModuleOp> module =
        train::buildTrainingModule(&context, shape, o);
    if (!module)
      return fail("the training graphs could not be built");
    std::error_code ec;
    raw_fd_ostream os(emitMlir, ec);
    if (ec)
      return fail(emitMlir + ": " + ec.message());
    module->print(os);
    return 0;
  }

  std::unique_ptr<rt::Device> device =
      tools::openFlaggedDevice(backend, deviceIndex, threads, validation);
  if (!device)
    return fail("no device to train on");

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto trainer = train::Trainer::create(&context, options, *device,
                                        (*corpus)->getBuffer().str());
  if (!trainer)
    return fail(trainer.status().message());
  train::Trainer &t = **trainer;
  const train::TrainerStats &st = t.stats();
  outs() << "model: width " << shape.dim << ", " << shape.layers
         << " layers, " << shape.heads << " heads, FFN " << shape.ffn
         << ", sequence " << shape.seq << ", vocabulary " << shape.vocab
         << ": " << st.parameters << " parameters\n";
  outs() << "device: " << device->info().name << " ("
         << rt::backendName(device->info().backend) << ")\n";
  outs() << "compiled @train_step: " << st.kernelsPerStep << " launches, "
         << st.distinctKernels << " kernels, in "
         << format("%.1f", st.compileMs / 1000) << " s\n";
  outs() << "memory: " << format("%.1f", st.deviceBytes / 1048576.0)
         << " MiB of device buffers for "
         << format("%.1f", st.stateBytes / 1048576.0)
         << " MiB of parameters and AdamW moments\n";
  if (!resumePath.empty()) {
    if (rt::Status s = t.loadCheckpoint(resumePath); !s)
      return fail(s.message());
    outs() << "resumed from " << resumePath << " at step " << t.step()
           << "\n";
  }
  if (stopAfter > 0 && t.step() > stopAfter)
    return fail("--stop-at " + std::to_string(stopAfter) +
                " is before the checkpoint's step " +
                std::to_string(t.step()));

  const int64_t last = stopAfter > 0 ? std::min<int64_t>(stopAfter, steps)
                                     : static_cast<int64_t>(steps);
  const bool progress = isatty(STDERR_FILENO);
  auto start = std::chrono::steady_clock::now();
  int64_t first = t.step(), done = 0;
  double windowLoss = 0;
  int64_t windowCount = 0;
  while (t.step() < last) {
    train::StepResult r;
    if (rt::Status s = t.runStep(r); !s)
      return fail(s.message());
    ++done;
    if (!std::isfinite(r.loss))
      return fail("the loss is " + std::to_string(r.loss) + " at step " +
                  std::to_string(t.step() - 1) +
                  " (try a lower --lr or --clip)");
    windowLoss += r.loss;
    ++windowCount;
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    double msPerStep = 1000 * seconds / done;
    double tokensPerSecond = done * shape.seq / seconds;
    if (printLosses)
      outs() << "step " << t.step() - 1 << " loss "
             << format("%.9g", r.loss) << "\n";
    if (t.step() % logEvery == 0 || t.step() == last) {
      if (progress)
        errs() << "\r\033[K";
      outs() << format("step %6lld/%lld  loss %.4f  grad-norm %.3f  lr "
                       "%.2e  %.0f tok/s  %.1f ms/step\n",
                       (long long)t.step(), (long long)(int64_t)steps,
                       windowLoss / windowCount, r.gradNorm, r.learningRate,
                       tokensPerSecond, msPerStep);
      outs().flush();
      windowLoss = 0;
      windowCount = 0;
    } else if (progress) {
      int64_t width = 30, filled = width * t.step() / last;
      errs() << "\r[" << std::string(filled, '#')
             << std::string(width - filled, '.') << "] step " << t.step()
             << "/" << last << format("  loss %.4f  %.0f tok/s", r.loss,
                                      tokensPerSecond);
    }
    if (!checkpointPath.empty() && checkpointEvery > 0 &&
        t.step() % checkpointEvery == 0 && t.step() < last)
      if (rt::Status s = t.saveCheckpoint(checkpointPath); !s)
        return fail(s.message());
  }
  if (progress)
    errs() << "\r\033[K";
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (done > 0)
    outs() << "trained steps " << first << ".." << t.step() - 1 << ": "
           << format("%.1f", 1000 * seconds / done) << " ms/step, "
           << format("%.0f", done * shape.seq / seconds) << " tok/s\n";
  if (!checkpointPath.empty()) {
    if (rt::Status s = t.saveCheckpoint(checkpointPath); !s)
      return fail(s.message());
    outs() << "checkpoint: " << checkpointPath << " (step " << t.step()
           << ")\n";
  }
  if (!outputPath.empty()) {
    if (rt::Status s = t.exportModel(outputPath); !s)
      return fail(s.message());
    outs() << "model: " << outputPath << "\n";
  }
  if (!dumpLogits.empty()) {
    std::vector<int32_t> tokens(shape.seq, ' ');
    for (size_t i = 0; i < tokens.size() && i < logitsText.size(); ++i)
      tokens[i] = static_cast<uint8_t>(logitsText[i]);
    std::vector<float> logits;
    if (rt::Status s = t.logits(tokens, logits); !s)
      return fail(s.message());
    rt::NpyArray array;
    array.dtype = rt::DType::F32;
    array.shape = {shape.seq, shape.vocab};
    array.data.resize(logits.size() * 4);
    std::memcpy(array.data.data(), logits.data(), array.data.size());
    if (rt::Status s = rt::writeNpy(dumpLogits, array); !s)
      return fail(s.message());
    outs() << "logits: " << dumpLogits << "\n";
  }
  return 0;
}
