//===- SessionTest.cpp - The model library without hesper-run -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Uses the library as a program would: writes a small llama GGUF file (f32
// weights from a fixed seed, no tokenizer), loads it, opens sessions on the
// reference interpreter and (when there is one) a Vulkan device, and checks
// properties that need no reference values: prompt chunks equal token-by-
// token feeding bit for bit, a reset session repeats itself, greedy
// generation is deterministic, and the device agrees with the interpreter.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Generate.h"
#include "Hesper/Models/ProgramCache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

using namespace hesper;
using namespace hesper::models;

namespace {

/// Writes GGUF v3 files: metadata of u32, f32 and string values, f32
/// tensors.
class TinyGgufWriter {
public:
  void u32(const std::string &key, uint32_t v) {
    meta.push_back({key, 4, bytesOf(v)});
  }
  void f32(const std::string &key, float v) {
    meta.push_back({key, 6, bytesOf(v)});
  }
  void str(const std::string &key, const std::string &v) {
    std::string b = bytesOf(uint64_t(v.size())) + v;
    meta.push_back({key, 8, b});
  }
  /// A tensor of ggml dims `dims` (row length first), values from a seeded
  /// generator scaled by `scale` around `center`.
  void tensor(const std::string &name, std::vector<uint64_t> dims,
              float scale, float center = 0.0f) {
    uint64_t n = 1;
    for (uint64_t d : dims)
      n *= d;
    std::vector<float> values(n);
    for (float &v : values) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = center + scale * (float((state >> 40) & 0xffff) / 32768.0f - 1.0f);
    }
    tensors.push_back({name, dims, values});
  }
  void write(const std::string &path) {
    std::string out = "GGUF" + bytesOf(uint32_t(3)) +
                      bytesOf(uint64_t(tensors.size())) +
                      bytesOf(uint64_t(meta.size()));
    for (const Meta &m : meta)
      out += bytesOf(uint64_t(m.key.size())) + m.key + bytesOf(m.type) +
             m.value;
    uint64_t offset = 0;
    for (const Tensor &t : tensors) {
      out += bytesOf(uint64_t(t.name.size())) + t.name +
             bytesOf(uint32_t(t.dims.size()));
      for (uint64_t d : t.dims)
        out += bytesOf(d);
      out += bytesOf(uint32_t(0)) + bytesOf(offset); // f32
      offset += (t.values.size() * 4 + 31) / 32 * 32;
    }
    out.resize((out.size() + 31) / 32 * 32, '\0');
    for (const Tensor &t : tensors) {
      out.append(reinterpret_cast<const char *>(t.values.data()),
                 t.values.size() * 4);
      out.resize((out.size() + 31) / 32 * 32, '\0');
    }
    std::ofstream(path, std::ios::binary) << out;
  }

private:
  template <typename T> static std::string bytesOf(T v) {
    return std::string(reinterpret_cast<const char *>(&v), sizeof(v));
  }
  struct Meta {
    std::string key;
    uint32_t type;
    std::string value;
  };
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    std::vector<float> values;
  };
  std::vector<Meta> meta;
  std::vector<Tensor> tensors;


public:
  uint64_t state = 12345;
};

constexpr int64_t kDim = 64, kFfn = 128, kVocab = 48, kCtx = 64;

/// The test model; `seed` draws other weight values, `ropeBase` changes a
/// metadata value, `suffix` names another file.
std::string writeModel(uint64_t seed = 12345, float ropeBase = 10000.0f,
                       const std::string &suffix = "",
                       bool tokenizerKeys = false) {
  std::string path =
      (std::filesystem::temp_directory_path() /
       ("hesper-session-test-" + std::to_string(::getpid()) + suffix +
        ".gguf"))
          .string();
  TinyGgufWriter w;
  w.state = seed;
  w.str("general.architecture", "llama");
  w.u32("llama.embedding_length", kDim);
  w.u32("llama.block_count", 2);
  w.u32("llama.feed_forward_length", kFfn);
  w.u32("llama.attention.head_count", 4);
  w.u32("llama.attention.head_count_kv", 2);
  w.u32("llama.context_length", kCtx);
  w.f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.f32("llama.rope.freq_base", ropeBase);
  if (tokenizerKeys) {
    w.u32("tokenizer.ggml.bos_token_id", 1);
    w.u32("tokenizer.ggml.eos_token_id", 2);
  }
  w.tensor("token_embd.weight", {kDim, kVocab}, 1.0f);
  w.tensor("output_norm.weight", {kDim}, 0.1f, 1.0f);
  for (int l = 0; l < 2; ++l) {
    std::string b = "blk." + std::to_string(l) + ".";
    float s = 1.0f / std::sqrt(float(kDim));
    w.tensor(b + "attn_norm.weight", {kDim}, 0.1f, 1.0f);
    w.tensor(b + "attn_q.weight", {kDim, kDim}, s);
    w.tensor(b + "attn_k.weight", {kDim, kDim / 2}, s);
    w.tensor(b + "attn_v.weight", {kDim, kDim / 2}, s);
    w.tensor(b + "attn_output.weight", {kDim, kDim}, s);
    w.tensor(b + "ffn_norm.weight", {kDim}, 0.1f, 1.0f);
    w.tensor(b + "ffn_gate.weight", {kDim, kFfn}, s);
    w.tensor(b + "ffn_up.weight", {kDim, kFfn}, s);
    w.tensor(b + "ffn_down.weight", {kFfn, kDim}, 1.0f / std::sqrt(kFfn));
  }
  w.write(path);
  return path;
}

class SessionTest : public ::testing::Test {
protected:
  void SetUp() override {
    path = writeModel();
    auto loaded = Model::load(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    model = std::move(*loaded);
  }
  void TearDown() override { std::filesystem::remove(path); }

  std::unique_ptr<Session> open(rt::Device *device, int64_t batch,
                                bool allLogits = true) {
    SessionOptions options;
    options.batchSize = batch;
    options.allLogits = allLogits;
    auto session = Session::create(*model, device, options);
    EXPECT_TRUE(session.ok()) << session.status().message();
    return session.ok() ? std::move(*session) : nullptr;
  }

  std::string path;
  std::unique_ptr<Model> model;
  const std::vector<int32_t> prompt{1, 7, 3, 44, 12, 9, 30, 2, 17, 5, 23};
};

TEST_F(SessionTest, LoadsTheHyperparameters) {
  const LlamaHParams &hp = model->hparams();
  EXPECT_EQ(hp.arch, "llama");
  EXPECT_EQ(hp.dim, kDim);
  EXPECT_EQ(hp.layers, 2);
  EXPECT_EQ(hp.kvHeads, 2);
  EXPECT_EQ(hp.headDim, 16);
  EXPECT_EQ(hp.vocab, kVocab);
  EXPECT_TRUE(hp.tiedHead);
  EXPECT_EQ(model->tokenizer(), nullptr); // the file has no tokenizer
}

TEST_F(SessionTest, ChunksEqualTokenByTokenAndResetRepeats) {
  auto chunked = open(nullptr, 4);
  auto single = open(nullptr, 1);
  ASSERT_TRUE(chunked && single);
  EXPECT_EQ(chunked->batchSize(), 4);
  std::vector<std::vector<float>> a, b;
  ASSERT_TRUE(chunked->feedMany(prompt, &a, /*allRows=*/true).ok());
  ASSERT_TRUE(single->feedMany(prompt, &b, /*allRows=*/true).ok());
  ASSERT_EQ(a.size(), prompt.size());
  ASSERT_EQ(b.size(), prompt.size());
  for (size_t p = 0; p < prompt.size(); ++p) {
    ASSERT_EQ(a[p].size(), size_t(kVocab));
    for (float v : a[p])
      ASSERT_TRUE(std::isfinite(v));
    EXPECT_EQ(0, std::memcmp(a[p].data(), b[p].data(), kVocab * 4))
        << "position " << p;
  }
  EXPECT_EQ(chunked->position(), int64_t(prompt.size()));
  // Logits depend on the earlier tokens: positions differ.
  EXPECT_NE(a[3], a[4]);
  // After a reset the same tokens give the same logits.
  chunked->reset();
  std::vector<std::vector<float>> again;
  ASSERT_TRUE(chunked->feedMany(prompt, &again, true).ok());
  EXPECT_EQ(again, a);
}

TEST(DefaultBatchSize, ManyRowsOnAGpuFewOnACpu) {
  rt::DeviceInfo info;
  EXPECT_EQ(defaultBatchSize(nullptr), 32); // the interpreter
  info.backend = rt::Backend::Cpu;
  info.type = rt::DeviceType::Cpu;
  EXPECT_EQ(defaultBatchSize(&info), 64);
  info.backend = rt::Backend::Vulkan; // lavapipe
  EXPECT_EQ(defaultBatchSize(&info), 32);
  info.type = rt::DeviceType::Discrete;
  EXPECT_EQ(defaultBatchSize(&info), 512);
  info.type = rt::DeviceType::Integrated;
  EXPECT_EQ(defaultBatchSize(&info), 512);
  info.backend = rt::Backend::Cuda;
  EXPECT_EQ(defaultBatchSize(&info), 512);
}

TEST(TailChunkRows, QuartersDownToEightRows) {
  EXPECT_EQ(tailChunkRows(32), (std::vector<int64_t>{8}));
  EXPECT_EQ(tailChunkRows(512), (std::vector<int64_t>{128, 32, 8}));
  EXPECT_EQ(tailChunkRows(40), (std::vector<int64_t>{10}));
  EXPECT_TRUE(tailChunkRows(31).empty());
  EXPECT_TRUE(tailChunkRows(16).empty());
  EXPECT_TRUE(tailChunkRows(1).empty());
}

TEST_F(SessionTest, APromptsTailRunsOnTheSmallerChunk) {
  // Chunks of 32 with a tail chunk of 8: each prompt length splits by the
  // fewest padded rows, and every split gives the token-by-token logits.
  auto chunked = open(nullptr, 32);
  auto single = open(nullptr, 1);
  ASSERT_TRUE(chunked && single);
  EXPECT_EQ(chunked->tailChunkRowCounts(), (std::vector<int64_t>{8}));
  EXPECT_TRUE(single->tailChunkRowCounts().empty());
  struct Case {
    size_t tokens;
    std::map<int64_t, int64_t> runs; // chunk rows -> runs
  };
  // 1: a decode step; 2 and 9: one chunk of 8 (9: then a decode step,
  // the last token alone); 17: chunks of 8 (24 rows beat 32) for 16
  // tokens, then a decode step; 25: 4 x 8 ties with one 32, which wins;
  // 40: 32 then 8.
  const std::vector<Case> cases{
      {1, {}},        {2, {{8, 1}}},   {9, {{8, 1}}},
      {17, {{8, 2}}}, {25, {{32, 1}}}, {40, {{32, 1}, {8, 1}}}};
  for (const Case &c : cases) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < c.tokens; ++i)
      ids.push_back(prompt[i % prompt.size()] + int32_t(i / prompt.size()));
    chunked->reset();
    single->reset();
    std::map<int64_t, int64_t> before = chunked->stats().chunkRuns;
    std::vector<std::vector<float>> a, b;
    ASSERT_TRUE(chunked->feedMany(ids, &a, /*allRows=*/true).ok());
    ASSERT_TRUE(single->feedMany(ids, &b, /*allRows=*/true).ok());
    std::map<int64_t, int64_t> runs = chunked->stats().chunkRuns;
    for (auto [rows, n] : before)
      if ((runs[rows] -= n) == 0)
        runs.erase(rows);
    EXPECT_EQ(runs, c.runs) << c.tokens << " tokens";
    ASSERT_EQ(a.size(), c.tokens);
    EXPECT_EQ(a, b) << c.tokens << " tokens";
  }
}

TEST_F(SessionTest, ChunksComputingTheLastLogitsOnlyAgree) {
  // Without allLogits a chunk computes the logits of its last token only
  // (the final norm and the head on one row): the same values.
  auto lastOnly = open(nullptr, 4, /*allLogits=*/false);
  auto all = open(nullptr, 4, /*allLogits=*/true);
  ASSERT_TRUE(lastOnly && all);
  std::vector<std::vector<float>> a, b;
  ASSERT_TRUE(lastOnly->feedMany(prompt, &a, /*allRows=*/false).ok());
  ASSERT_TRUE(all->feedMany(prompt, &b, /*allRows=*/true).ok());
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], b.back());
  EXPECT_EQ(lastOnly->position(), int64_t(prompt.size()));
  // Asked for every row, it runs the prompt token by token: same rows.
  lastOnly->reset();
  std::vector<std::vector<float>> c;
  ASSERT_TRUE(lastOnly->feedMany(prompt, &c, /*allRows=*/true).ok());
  EXPECT_EQ(c, b);
}

TEST_F(SessionTest, GreedyGenerationIsDeterministicAndStopsAtTheContext) {
  GenerateOptions options;
  options.maxTokens = 12;
  options.sampler.temperature = 0;
  std::vector<int32_t> first, second;
  for (auto *out : {&first, &second}) {
    auto session = open(nullptr, 4, /*allLogits=*/false);
    ASSERT_TRUE(session);
    auto result = generate(*session, prompt, options, {});
    ASSERT_TRUE(result.ok()) << result.status().message();
    *out = result->generated;
  }
  EXPECT_EQ(first.size(), 12u);
  EXPECT_EQ(first, second);
  // A prompt longer than the context is an error, not a crash.
  auto session = open(nullptr, 4);
  std::vector<int32_t> tooLong(kCtx + 1, 3);
  auto result = generate(*session, tooLong, options, {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("more than the"),
            std::string::npos);
  // So is a token outside the vocabulary.
  std::vector<float> logits;
  EXPECT_FALSE(session->feed(kVocab, &logits).ok());
}

TEST_F(SessionTest, VulkanAgreesWithTheInterpreter) {
  auto device = rt::openDevice(rt::Backend::Vulkan);
  if (!device.ok())
    GTEST_SKIP() << device.status().message();
  auto onDevice = open(device->get(), 4);
  auto interpreted = open(nullptr, 4);
  ASSERT_TRUE(onDevice && interpreted);
  std::vector<std::vector<float>> a, b;
  ASSERT_TRUE(onDevice->feedMany(prompt, &a, true).ok());
  ASSERT_TRUE(interpreted->feedMany(prompt, &b, true).ok());
  for (size_t p = 0; p < prompt.size(); ++p) {
    float scale = 0, err = 0;
    for (int64_t v = 0; v < kVocab; ++v) {
      scale = std::max(scale, std::fabs(b[p][v]));
      err = std::max(err, std::fabs(a[p][v] - b[p][v]));
    }
    EXPECT_LE(err, 1e-4f * scale) << "position " << p;
  }
  // Decoding after the prompt continues on the device.
  std::vector<float> next;
  ASSERT_TRUE(onDevice->feed(3, &next).ok());
  EXPECT_EQ(onDevice->position(), int64_t(prompt.size()) + 1);
  EXPECT_GT(onDevice->stats().kernelsPerToken, 0);
  EXPECT_GT(onDevice->stats().kernelsPerChunk, 0);
}

/// Runs the same two prompts through a session of 3 sequences, mixing
/// prompt rows of one sequence with another's in the same step, and
/// returns {every logits row of prompt 1, of prompt 2} by position.
static void runTwoSequences(Session &batch, const std::vector<int32_t> &a,
                            const std::vector<int32_t> &b,
                            std::vector<std::vector<float>> &outA,
                            std::vector<std::vector<float>> &outB) {
  // Step k runs one token of a at position k in sequence 2 and, from step
  // 2 on, one of b in sequence 0: rows of two sequences in every step, at
  // different positions; each asks for its logits.
  size_t steps = std::max(a.size(), b.size() + 2);
  for (size_t k = 0; k < steps; ++k) {
    std::vector<BatchRow> rows;
    if (k < a.size())
      rows.push_back({a[k], 2, int64_t(k), true});
    if (k >= 2 && k - 2 < b.size())
      rows.push_back({b[k - 2], 0, int64_t(k - 2), true});
    std::vector<std::vector<float>> logits;
    ASSERT_TRUE(batch.runBatch(rows, &logits).ok());
    ASSERT_EQ(logits.size(), rows.size());
    size_t i = 0;
    if (k < a.size())
      outA.push_back(logits[i++]);
    if (k >= 2 && k - 2 < b.size())
      outB.push_back(logits[i++]);
  }
}

TEST_F(SessionTest, BatchStepsOfSeveralSequencesEqualOneSequenceAlone) {
  // Continuous batching: a token's logits depend only on its own
  // sequence, whatever shares the step, bit for bit, on the interpreter,
  // the CPU target and Vulkan (lavapipe).
  // Ten tokens: the one-sequence session runs both prompts in chunks of 8
  // rows (11 = 8 + 3 padded, 10 = 8 + 2), the row tile of every batch step.
  const std::vector<int32_t> other{4, 4, 8, 15, 16, 23, 42, 0, 11, 6};
  std::vector<std::unique_ptr<rt::Device>> devices;
  devices.push_back(nullptr);
  for (rt::Backend backend : {rt::Backend::Cpu, rt::Backend::Vulkan})
    if (auto device = rt::openDevice(backend); device.ok())
      devices.push_back(std::move(*device));
  for (auto &device : devices) {
    SCOPED_TRACE(device ? rt::backendName(device->info().backend)
                        : "interpreter");
    auto alone = open(device.get(), 8);
    ASSERT_TRUE(alone);
    std::vector<std::vector<float>> a, b;
    ASSERT_TRUE(alone->feedMany(prompt, &a, true).ok());
    alone->reset();
    ASSERT_TRUE(alone->feedMany(other, &b, true).ok());

    SessionOptions options;
    options.sequences = 3;
    options.batchSize = 8;
    options.batchInvariant = true;
    auto batch = Session::create(*model, device.get(), options);
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    EXPECT_EQ((*batch)->batchRowCounts(), (std::vector<int64_t>{8, 11}));
    EXPECT_EQ((*batch)->maxBatchRows(), 11);
    std::vector<std::vector<float>> ba, bb;
    runTwoSequences(**batch, prompt, other, ba, bb);
    ASSERT_EQ(ba.size(), a.size());
    ASSERT_EQ(bb.size(), b.size());
    for (size_t p = 0; p < a.size(); ++p)
      EXPECT_EQ(0, std::memcmp(ba[p].data(), a[p].data(), kVocab * 4))
          << "sequence 2, position " << p;
    for (size_t p = 0; p < b.size(); ++p)
      EXPECT_EQ(0, std::memcmp(bb[p].data(), b[p].data(), kVocab * 4))
          << "sequence 0, position " << p;

    // A prompt chunk of one sequence beside a decode token of another, in
    // one step of 11 rows, logits of the chunk's last row only.
    std::vector<BatchRow> rows;
    for (int64_t p = 0; p < 9; ++p)
      rows.push_back({prompt[p], 1, p, p == 8});
    rows.push_back({other[7], 0, 7, true});
    std::vector<std::vector<float>> logits;
    ASSERT_TRUE((*batch)->runBatch(rows, &logits).ok());
    ASSERT_EQ(logits.size(), 2u);
    EXPECT_EQ(0, std::memcmp(logits[0].data(), a[8].data(), kVocab * 4));
    EXPECT_EQ(0, std::memcmp(logits[1].data(), b[7].data(), kVocab * 4));

    // Bad rows are errors, not crashes.
    EXPECT_FALSE((*batch)->runBatch({{1, 3, 0, true}}, &logits).ok());
    EXPECT_FALSE((*batch)->runBatch({{1, 0, kCtx, true}}, &logits).ok());
    EXPECT_FALSE((*batch)->runBatch({{kVocab, 0, 0, true}}, &logits).ok());
    EXPECT_FALSE((*batch)->runBatch(std::vector<BatchRow>(12), &logits).ok());
    EXPECT_FALSE((*batch)->feed(1, &logits[0]).ok());

    // Without batchInvariant a lone token runs on a one-row step: the
    // same logits as one sequence's decode step, bit for bit.
    options.batchInvariant = false;
    auto fast = Session::create(*model, device.get(), options);
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    EXPECT_EQ((*fast)->batchRowCounts(), (std::vector<int64_t>{1, 8, 11}));
    auto single = open(device.get(), 1);
    std::vector<float> expected;
    for (size_t p = 0; p < 3; ++p) {
      ASSERT_TRUE(single->feed(prompt[p], &expected).ok());
      std::vector<std::vector<float>> got;
      ASSERT_TRUE((*fast)->runBatch({{prompt[p], 1, int64_t(p), true}}, &got)
                      .ok());
      EXPECT_EQ(0, std::memcmp(got[0].data(), expected.data(), kVocab * 4));
    }
  }
}

TEST_F(SessionTest, ProgramCacheKeyCoversWhatChangesThePrograms) {
  rt::DeviceInfo cpu;
  cpu.backend = rt::Backend::Cpu;
  cpu.cacheId = "cpu:x86-64-v3";
  SessionOptions options;
  auto key = [&](const Model &m, const SessionOptions &o, int64_t ctx,
                 const rt::DeviceInfo &d, const std::string &tuning = "",
                 const std::string &compiler = "hesper-1") {
    return programCacheKey(m, o, ctx, d, tuning, compiler);
  };
  const std::string base = key(*model, options, kCtx, cpu);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, key(*model, options, kCtx, cpu));

  // Other weight values: the same key. What only runs differently (timing,
  // the folder) neither.
  std::string reseeded = writeModel(999, 10000.0f, "-seed");
  auto other = Model::load(reseeded);
  ASSERT_TRUE(other.ok()) << other.status().message();
  const rt::GgufTensor &mine = model->file().tensors()[0];
  const rt::GgufTensor &theirs = (*other)->file().tensors()[0];
  ASSERT_EQ(mine.bytes, theirs.bytes);
  EXPECT_NE(0, std::memcmp(mine.data, theirs.data, mine.bytes));
  EXPECT_EQ(base, key(**other, options, kCtx, cpu));
  SessionOptions runtimeOnly = options;
  runtimeOnly.timing = true;
  runtimeOnly.programCache = true;
  runtimeOnly.programCacheDir = "/elsewhere";
  EXPECT_EQ(base, key(*model, runtimeOnly, kCtx, cpu));
  // Nor the tokenizer's keys, which only set up the host's tokenizer.
  std::string tokenized = writeModel(12345, 10000.0f, "-tokenizer", true);
  auto withTokenizer = Model::load(tokenized);
  ASSERT_TRUE(withTokenizer.ok()) << withTokenizer.status().message();
  ASSERT_NE((*withTokenizer)->file().find("tokenizer.ggml.eos_token_id"),
            nullptr);
  EXPECT_EQ(base, key(**withTokenizer, options, kCtx, cpu));
  std::filesystem::remove(tokenized);

  // Every field that shapes the programs: a key of its own.
  std::vector<std::string> changed;
  changed.push_back(key(*model, options, kCtx / 2, cpu));
  auto withOption = [&](auto set) {
    SessionOptions o = options;
    set(o);
    changed.push_back(key(*model, o, kCtx, cpu));
  };
  withOption([](SessionOptions &o) { o.batchSize = 16; });
  withOption([](SessionOptions &o) { o.allLogits = true; });
  withOption([](SessionOptions &o) { o.sequences = 4; });
  withOption([](SessionOptions &o) { o.batchInvariant = true; });
  withOption([](SessionOptions &o) { o.fuse = false; });
  withOption([](SessionOptions &o) { o.matrixUnits = true; });
  // Turned off is not the session's own choice (unset).
  withOption([](SessionOptions &o) { o.matrixUnits = false; });
  rt::DeviceInfo v4 = cpu;
  v4.cacheId = "cpu:x86-64-v4";
  changed.push_back(key(*model, options, kCtx, v4));
  rt::DeviceInfo vulkan = cpu;
  vulkan.backend = rt::Backend::Vulkan;
  changed.push_back(key(*model, options, kCtx, vulkan));
  changed.push_back(key(*model, options, kCtx, cpu, "{\"entries\": []}"));
  changed.push_back(key(*model, options, kCtx, cpu, "", "hesper-2"));
  std::string rebased = writeModel(12345, 500000.0f, "-rope");
  auto ropeModel = Model::load(rebased);
  ASSERT_TRUE(ropeModel.ok()) << ropeModel.status().message();
  changed.push_back(key(**ropeModel, options, kCtx, cpu));
  std::set<std::string> distinct(changed.begin(), changed.end());
  distinct.insert(base);
  EXPECT_EQ(distinct.size(), changed.size() + 1);
  std::filesystem::remove(reseeded);
  std::filesystem::remove(rebased);
}

TEST_F(SessionTest, ProgramCacheHitsGiveTheSameLogits) {
  auto device = rt::openDevice(rt::Backend::Cpu);
  if (!device.ok())
    GTEST_SKIP() << "no CPU target";
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("hesper-program-cache-" + std::to_string(::getpid())))
                        .string();
  SessionOptions options;
  options.batchSize = 4;
  options.allLogits = true;
  options.programCache = true;
  options.programCacheDir = dir;
  std::vector<std::vector<float>> first, second;
  for (auto [want, out] : {std::pair{"miss", &first}, {"hit", &second}}) {
    auto session = Session::create(*model, device->get(), options);
    ASSERT_TRUE(session.ok()) << session.status().message();
    EXPECT_EQ((*session)->stats().programCache, want);
    EXPECT_EQ((*session)->stats().programCacheWarning, "");
    EXPECT_EQ((*session)->stats().kernelsPerChunk > 0, true);
    ASSERT_TRUE((*session)->feedMany(prompt, out, true).ok());
  }
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i)
    EXPECT_EQ(0, std::memcmp(first[i].data(), second[i].data(), kVocab * 4));
  ProgramCacheInfo info = programCacheInfo(dir);
  EXPECT_EQ(info.entries, 1);
  EXPECT_EQ(info.hits, 1);
  EXPECT_EQ(info.misses, 1);
  std::filesystem::remove_all(dir);
}

} // namespace
