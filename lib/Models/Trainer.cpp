//===- Trainer.cpp - Training a small transformer on a device -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Trainer.h"

#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "Hesper/Execution/Execution.h"

#include "hesper/runtime/Gguf.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"

#include <chrono>
#include <cmath>
#include <cstring>

using namespace mlir;
using namespace hesper;
using namespace hesper::train;
using rt::Status;

Trainer::~Trainer() = default;

namespace {

/// splitmix64: a small, seedable generator with no hidden state.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Standard normal values from (seed, stream), by Box-Muller.
class Normal {
public:
  Normal(uint64_t seed, uint64_t stream) : state(mix(seed) ^ mix(~stream)) {}
  double next() {
    if (spare) {
      spare = false;
      return saved;
    }
    double u1 = uniform(), u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    saved = r * std::sin(2 * M_PI * u2);
    spare = true;
    return r * std::cos(2 * M_PI * u2);
  }

private:
  double uniform() { // (0, 1]
    state = mix(state);
    return (static_cast<double>(state >> 11) + 1.0) * 0x1.0p-53;
  }
  uint64_t state;
  bool spare = false;
  double saved = 0;
};

/// GPT-2's byte-to-text mapping: the token of byte b as UTF-8.
std::vector<std::string> byteTokens() {
  std::vector<int> codepoint(256, -1);
  for (int b = 0; b < 256; ++b)
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
        (b >= 0xAE && b <= 0xFF))
      codepoint[b] = b;
  int extra = 0;
  for (int b = 0; b < 256; ++b)
    if (codepoint[b] < 0)
      codepoint[b] = 256 + extra++;
  std::vector<std::string> out;
  for (int cp : codepoint) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    out.push_back(s);
  }
  return out;
}

/// GGUF dims (fastest first) of a row-major shape.
std::vector<int64_t> ggufDims(const std::vector<int64_t> &shape) {
  return std::vector<int64_t>(shape.rbegin(), shape.rend());
}

} // namespace

rt::Result<std::unique_ptr<Trainer>>
Trainer::create(MLIRContext *context, const TrainerOptions &options,
                rt::Device &device, std::string corpus) {
  const ModelShape &s = options.shape;
  if (std::string problem = checkShape(s); !problem.empty())
    return Status::error("model shape: " + problem);
  if (options.optimizer.warmup < 1)
    return Status::error("the warmup must be at least 1 step");
  if (corpus.size() < static_cast<size_t>(s.seq) + 2)
    return Status::error("the corpus has " + std::to_string(corpus.size()) +
                         " bytes; a sequence of " + std::to_string(s.seq) +
                         " needs at least " + std::to_string(s.seq + 2));
  std::unique_ptr<Trainer> t(new Trainer());
  t->opts = options;
  t->corpus = std::move(corpus);
  t->params = parameters(s);

  auto start = std::chrono::steady_clock::now();
  OwningOpRef<ModuleOp> module =
      buildTrainingModule(context, s, options.optimizer);
  if (!module)
    return Status::error("the training graphs could not be built");
  // Only @train_step and @logits run; @loss and @loss_grad were the
  // material @train_step was made from.
  for (StringRef name : {"loss", "loss_grad"})
    if (auto graph = module->lookupSymbol<circuit::GraphOp>(name))
      graph.erase();
  CompileOptions compile;
  compile.fuse = options.fuse;
  compile.dumpDir = options.dumpDir;
  std::vector<std::string> names{"train_step", "logits"};
  auto programs = compileForDevice(*module, ArrayRef<std::string>(names),
                                   device.info(), compile);
  if (failed(programs))
    return Status::error("the training graphs could not be compiled");
  t->statistics.compileMs =
      std::chrono::duration<double, std::milli>(
          std::chrono::steady_clock::now() - start)
          .count();

  const rt::Program &stepProgram = (*programs)[0];
  auto stepRunner = rt::ProgramRunner::create(device, stepProgram, false);
  if (!stepRunner)
    return stepRunner.status();
  t->stepRunner = std::move(*stepRunner);
  const uint32_t numParams = t->params.size();
  std::vector<rt::Buffer *> shared(numParams + 1, nullptr);
  for (uint32_t i = 0; i < numParams; ++i)
    shared[i] = t->stepRunner->argumentBuffer(i);
  auto logitsRunner =
      rt::ProgramRunner::create(device, (*programs)[1], false, shared);
  if (!logitsRunner)
    return logitsRunner.status();
  t->logitsRunner = std::move(*logitsRunner);
  t->tokensArg = 3 * numParams;
  t->targetsArg = t->tokensArg + 1;
  t->stepArg = t->tokensArg + 2;
  t->logitsTokensArg = numParams;

  TrainerStats &st = t->statistics;
  st.kernelsPerStep = stepProgram.launches.size();
  st.distinctKernels = stepProgram.kernels.size();
  for (const Parameter &p : t->params)
    st.parameters += p.numElements();
  st.stateBytes = 3 * 4 * static_cast<uint64_t>(st.parameters);
  for (const rt::ProgramBuffer &b : stepProgram.buffers)
    st.deviceBytes += b.bytes;

  // Initial weights: matrices N(0, 1/fan_in), the two residual outputs of
  // each layer further scaled by 1/sqrt(2·layers), the embedding N(0, 1),
  // norms 1; moments 0. Each tensor draws from its own stream.
  for (auto [i, p] : llvm::enumerate(t->params)) {
    std::vector<float> values(p.numElements());
    if (p.shape.size() == 1) {
      std::fill(values.begin(), values.end(), 1.0f);
    } else {
      double scale = 1.0 / std::sqrt(static_cast<double>(p.shape[1]));
      if (p.name == "token_embd.weight")
        scale = 1.0;
      if (StringRef(p.name).ends_with("attn_output.weight") ||
          StringRef(p.name).ends_with("ffn_down.weight"))
        scale /= std::sqrt(2.0 * static_cast<double>(s.layers));
      Normal normal(options.seed, i);
      for (float &v : values)
        v = static_cast<float>(normal.next() * scale);
    }
    std::vector<float> zeros(values.size(), 0.0f);
    size_t bytes = values.size() * 4;
    for (auto [arg, data] :
         {std::pair{uint32_t(i), values.data()},
          std::pair{uint32_t(numParams + i), zeros.data()},
          std::pair{uint32_t(2 * numParams + i), zeros.data()}})
      if (Status status = t->stepRunner->setArgument(arg, data, bytes);
          !status)
        return status;
  }
  return t;
}

void Trainer::batch(int64_t step, std::vector<int32_t> &tokens,
                    std::vector<int32_t> &targets) const {
  const int64_t seq = opts.shape.seq;
  uint64_t span = corpus.size() - static_cast<uint64_t>(seq);
  uint64_t offset = mix(mix(opts.seed) ^ static_cast<uint64_t>(step)) % span;
  tokens.resize(seq);
  targets.resize(seq);
  for (int64_t i = 0; i < seq; ++i) {
    tokens[i] = static_cast<uint8_t>(corpus[offset + i]);
    targets[i] = static_cast<uint8_t>(corpus[offset + i + 1]);
  }
}

Status Trainer::runStep(StepResult &result) {
  std::vector<int32_t> tokens, targets;
  batch(nextStep, tokens, targets);
  float step = static_cast<float>(nextStep);
  if (Status s = stepRunner->setArgument(tokensArg, tokens.data(),
                                         tokens.size() * 4);
      !s)
    return s;
  if (Status s = stepRunner->setArgument(targetsArg, targets.data(),
                                         targets.size() * 4);
      !s)
    return s;
  if (Status s = stepRunner->setArgument(stepArg, &step, 4); !s)
    return s;
  if (Status s = stepRunner->run(); !s)
    return s;
  float *fields[] = {&result.loss, &result.gradNorm, &result.learningRate};
  for (uint32_t r = 0; r < 3; ++r) {
    std::vector<uint8_t> bytes;
    if (Status s = stepRunner->readResult(r, bytes); !s)
      return s;
    std::memcpy(fields[r], bytes.data(), 4);
  }
  ++nextStep;
  return {};
}

Status Trainer::logits(const std::vector<int32_t> &tokens,
                       std::vector<float> &out) {
  if (static_cast<int64_t>(tokens.size()) != opts.shape.seq)
    return Status::error("logits: expects " + std::to_string(opts.shape.seq) +
                         " tokens, got " + std::to_string(tokens.size()));
  if (Status s = logitsRunner->setArgument(logitsTokensArg, tokens.data(),
                                           tokens.size() * 4);
      !s)
    return s;
  if (Status s = logitsRunner->run(); !s)
    return s;
  std::vector<uint8_t> bytes;
  if (Status s = logitsRunner->readResult(0, bytes); !s)
    return s;
  out.resize(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return {};
}

Status Trainer::readParameters(std::vector<std::vector<float>> &out) {
  out.clear();
  for (uint32_t i = 0; i < params.size(); ++i) {
    std::vector<uint8_t> bytes;
    if (Status s = stepRunner->readArgument(i, bytes); !s)
      return s;
    out.emplace_back(bytes.size() / 4);
    std::memcpy(out.back().data(), bytes.data(), bytes.size());
  }
  return {};
}

Status Trainer::write(const std::string &path, bool withOptimizer) {
  const ModelShape &s = opts.shape;
  const OptimizerConfig &o = opts.optimizer;
  rt::GgufWriter w;
  w.addString("general.architecture", "llama");
  w.addString("general.name", "hesper-train");
  w.addU32("llama.context_length", static_cast<uint32_t>(s.seq));
  w.addU32("llama.embedding_length", static_cast<uint32_t>(s.dim));
  w.addU32("llama.block_count", static_cast<uint32_t>(s.layers));
  w.addU32("llama.feed_forward_length", static_cast<uint32_t>(s.ffn));
  w.addU32("llama.attention.head_count", static_cast<uint32_t>(s.heads));
  w.addU32("llama.attention.head_count_kv", static_cast<uint32_t>(s.heads));
  w.addU32("llama.rope.dimension_count", static_cast<uint32_t>(s.headDim()));
  w.addF32("llama.rope.freq_base", static_cast<float>(s.ropeBase));
  w.addF32("llama.attention.layer_norm_rms_epsilon",
           static_cast<float>(s.eps));
  w.addU32("llama.vocab_size", static_cast<uint32_t>(s.vocab));
  // Byte-level tokens without merges: token b is byte b.
  w.addString("tokenizer.ggml.model", "gpt2");
  w.addString("tokenizer.ggml.pre", "default");
  w.addStringArray("tokenizer.ggml.tokens", byteTokens());
  w.addI32Array("tokenizer.ggml.token_type", std::vector<int32_t>(256, 1));
  w.addBool("tokenizer.ggml.add_bos_token", false);
  if (withOptimizer) {
    w.addU64("hesper.train.step", static_cast<uint64_t>(nextStep));
    w.addU64("hesper.train.seed", opts.seed);
    w.addF32Array("hesper.train.optimizer",
                  {static_cast<float>(o.lr), static_cast<float>(o.minLr),
                   static_cast<float>(o.beta1), static_cast<float>(o.beta2),
                   static_cast<float>(o.eps),
                   static_cast<float>(o.weightDecay),
                   static_cast<float>(o.clipNorm),
                   static_cast<float>(o.warmup),
                   static_cast<float>(o.totalSteps)});
  }
  const uint32_t numParams = params.size();
  for (uint32_t k = 0; k < (withOptimizer ? 3u : 1u); ++k) {
    const char *prefix[] = {"", "adam.m.", "adam.v."};
    for (uint32_t i = 0; i < numParams; ++i) {
      std::vector<uint8_t> bytes;
      if (Status st = stepRunner->readArgument(k * numParams + i, bytes); !st)
        return st;
      w.addTensor(prefix[k] + params[i].name, ggufDims(params[i].shape),
                  reinterpret_cast<const float *>(bytes.data()));
    }
  }
  return w.write(path);
}

Status Trainer::saveCheckpoint(const std::string &path) {
  return write(path, /*withOptimizer=*/true);
}

Status Trainer::exportModel(const std::string &path) {
  return write(path, /*withOptimizer=*/false);
}

Status Trainer::loadCheckpoint(const std::string &path) {
  auto file = rt::GgufFile::open(path);
  if (!file)
    return file.status();
  const rt::GgufFile &g = **file;
  auto fail = [&](const std::string &what) {
    return Status::error(path + ": " + what);
  };
  auto step = g.getInt("hesper.train.step");
  auto seed = g.getInt("hesper.train.seed");
  if (!step || !seed)
    return fail("not a hesper-train checkpoint (no hesper.train.step)");
  if (static_cast<uint64_t>(*seed) != opts.seed)
    return fail("written with --seed " + std::to_string(*seed) +
                ", this run has " + std::to_string(opts.seed));
  const OptimizerConfig &o = opts.optimizer;
  // A step past the schedule's end (an edited or corrupt file) would
  // "resume" with nothing to run and write a model as if trained.
  if (*step < 0 || *step > o.totalSteps)
    return fail("at step " + std::to_string(*step) + ", outside the 0.." +
                std::to_string(o.totalSteps) + " steps of this run (--steps)");
  std::vector<float> expected{
      static_cast<float>(o.lr),          static_cast<float>(o.minLr),
      static_cast<float>(o.beta1),       static_cast<float>(o.beta2),
      static_cast<float>(o.eps),         static_cast<float>(o.weightDecay),
      static_cast<float>(o.clipNorm),    static_cast<float>(o.warmup),
      static_cast<float>(o.totalSteps)};
  const rt::GgufValue *saved = g.find("hesper.train.optimizer");
  bool same = saved && saved->array.size() == expected.size();
  for (size_t i = 0; same && i < expected.size(); ++i)
    same = static_cast<float>(saved->array[i].f) == expected[i];
  if (!same)
    return fail("written with other optimizer settings (learning rate, "
                "schedule, betas, clipping); resume with the same ones");
  const uint32_t numParams = params.size();
  for (uint32_t k = 0; k < 3; ++k) {
    const char *prefix[] = {"", "adam.m.", "adam.v."};
    for (uint32_t i = 0; i < numParams; ++i) {
      std::string name = prefix[k] + params[i].name;
      const rt::GgufTensor *t = g.tensor(name);
      if (!t)
        return fail("missing tensor '" + name + "'");
      if (t->type != rt::GgmlType::F32 ||
          t->dims != ggufDims(params[i].shape))
        return fail("tensor '" + name +
                    "' does not match this model's shape (f32 " +
                    std::to_string(params[i].numElements()) + " values)");
      if (Status s =
              stepRunner->setArgument(k * numParams + i, t->data, t->bytes);
          !s)
        return s;
    }
  }
  nextStep = *step;
  return {};
}
