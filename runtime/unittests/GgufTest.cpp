//===- GgufTest.cpp - Tests of the GGUF reader -----------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// GGUF images are built in memory by a small writer here (so the tests need
// no model files), parsed back, and compared field by field. Dequantization
// is checked against blocks packed here from chosen values, with the expected
// floats derived from the block layouts as ggml documents them. Every error
// has a test that checks its message; a truncation sweep and a byte-flip
// sweep check that malformed files fail cleanly (run them under ASan).
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace hesper::rt;

namespace {

//===----------------------------------------------------------------------===//
// A GGUF writer
//===----------------------------------------------------------------------===//

/// Little-endian bytes under construction.
struct Bytes {
  std::vector<uint8_t> b;

  Bytes &le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      b.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Bytes &u8(uint8_t v) { return le(v, 1); }
  Bytes &u16(uint16_t v) { return le(v, 2); }
  Bytes &u32(uint32_t v) { return le(v, 4); }
  Bytes &u64(uint64_t v) { return le(v, 8); }
  Bytes &i8(int8_t v) { return le(static_cast<uint8_t>(v), 1); }
  Bytes &i16(int16_t v) { return le(static_cast<uint16_t>(v), 2); }
  Bytes &i32(int32_t v) { return le(static_cast<uint32_t>(v), 4); }
  Bytes &i64(int64_t v) { return le(static_cast<uint64_t>(v), 8); }
  Bytes &f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return u32(bits);
  }
  Bytes &f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return u64(bits);
  }
  Bytes &str(const std::string &s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes &raw(const std::vector<uint8_t> &v) {
    b.insert(b.end(), v.begin(), v.end());
    return *this;
  }
  /// An array header: element type and count (the elements follow).
  Bytes &array(GgufType element, uint64_t count) {
    return u32(static_cast<uint32_t>(element)).u64(count);
  }
};

uint32_t typeNum(GgufType t) { return static_cast<uint32_t>(t); }
uint32_t typeNum(GgmlType t) { return static_cast<uint32_t>(t); }

/// One metadata entry: key, value type, and the value's bytes.
std::vector<uint8_t> entry(const std::string &key, GgufType t,
                           const Bytes &value) {
  return Bytes().str(key).u32(typeNum(t)).raw(value.b).b;
}
std::vector<uint8_t> entryRawType(const std::string &key, uint32_t type,
                                  const Bytes &value) {
  return Bytes().str(key).u32(type).raw(value.b).b;
}

constexpr uint64_t kAutoOffset = ~uint64_t(0);

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type = 0;
  std::vector<uint8_t> data;
  /// Offset in the data section; kAutoOffset places it after the previous
  /// tensor, aligned.
  uint64_t offset = kAutoOffset;
};

struct ImageSpec {
  uint32_t version = 3;
  std::vector<std::vector<uint8_t>> entries;
  std::vector<TensorSpec> tensors;
  /// The padding the writer uses (the file's key is a separate entry).
  uint64_t alignment = 32;
  /// Counts written into the header instead of the real ones.
  std::optional<uint64_t> tensorCount, entryCount;
};

struct Image {
  std::vector<uint8_t> bytes;
  size_t headerEnd = 0; ///< end of the tensor infos
  size_t dataStart = 0;
  std::vector<uint64_t> offsets; ///< as written
};

Image build(const ImageSpec &spec) {
  Bytes out;
  out.raw({'G', 'G', 'U', 'F'}).u32(spec.version);
  out.u64(spec.tensorCount ? *spec.tensorCount : spec.tensors.size());
  out.u64(spec.entryCount ? *spec.entryCount : spec.entries.size());
  for (const auto &e : spec.entries)
    out.raw(e);
  Image image;
  uint64_t running = 0;
  for (const TensorSpec &t : spec.tensors) {
    out.str(t.name).u32(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims)
      out.u64(d);
    out.u32(t.type);
    uint64_t offset = t.offset;
    if (offset == kAutoOffset) {
      offset = (running + spec.alignment - 1) / spec.alignment * spec.alignment;
      running = offset + t.data.size();
    }
    image.offsets.push_back(offset);
    out.u64(offset);
  }
  image.headerEnd = out.b.size();
  image.dataStart = (image.headerEnd + spec.alignment - 1) / spec.alignment *
                    spec.alignment;
  out.b.resize(image.dataStart, 0);
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const TensorSpec &t = spec.tensors[i];
    if (image.offsets[i] > (uint64_t(1) << 30))
      continue; // a deliberately absurd offset: write nothing
    size_t at = image.dataStart + image.offsets[i];
    if (out.b.size() < at + t.data.size())
      out.b.resize(at + t.data.size(), 0);
    std::copy(t.data.begin(), t.data.end(), out.b.begin() + at);
  }
  image.bytes = std::move(out.b);
  return image;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>(seed + 31 * i + (i >> 3));
  return v;
}

std::vector<uint8_t> f32Bytes(std::initializer_list<float> values) {
  Bytes b;
  for (float f : values)
    b.f32(f);
  return b.b;
}

Result<std::unique_ptr<GgufFile>> parse(const std::vector<uint8_t> &image) {
  return GgufFile::parse(image.data(), image.size(), "x.gguf");
}

/// Expects `image` to fail with one line that starts with "x.gguf: " and
/// contains every needle.
void expectError(const std::vector<uint8_t> &image,
                 std::initializer_list<std::string> needles) {
  auto r = parse(image);
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << *needles.begin();
  const std::string &msg = r.status().message();
  EXPECT_EQ(msg.rfind("x.gguf: ", 0), 0u) << msg;
  for (const std::string &needle : needles)
    EXPECT_NE(msg.find(needle), std::string::npos)
        << "'" << needle << "' not in: " << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

ImageSpec oneTensor(TensorSpec t, std::vector<std::vector<uint8_t>> entries =
                                      {}) {
  ImageSpec spec;
  spec.entries = std::move(entries);
  spec.tensors.push_back(std::move(t));
  return spec;
}

TensorSpec f32Tensor(const std::string &name, std::vector<uint64_t> dims) {
  uint64_t n = 1;
  for (uint64_t d : dims)
    n *= d;
  return {name, dims, typeNum(GgmlType::F32), pattern(n * 4, 1)};
}

/// A small image with metadata of several kinds and three tensors; the sweeps
/// corrupt it.
Image sampleImage() {
  ImageSpec spec;
  spec.entries.push_back(entry("general.architecture", GgufType::String,
                               Bytes().str("llama")));
  spec.entries.push_back(
      entry("general.alignment", GgufType::U32, Bytes().u32(32)));
  spec.entries.push_back(
      entry("llama.block_count", GgufType::U32, Bytes().u32(2)));
  spec.entries.push_back(entry("llama.rope.freq_base", GgufType::F32,
                               Bytes().f32(10000.0f)));
  spec.entries.push_back(entry("tokenizer.ggml.tokens", GgufType::Array,
                               Bytes()
                                   .array(GgufType::String, 3)
                                   .str("<s>")
                                   .str("a")
                                   .str("bc")));
  spec.entries.push_back(entry("tokenizer.ggml.scores", GgufType::Array,
                               Bytes()
                                   .array(GgufType::F32, 3)
                                   .f32(0)
                                   .f32(-1)
                                   .f32(-2)));
  spec.entries.push_back(entry("x.nested", GgufType::Array,
                               Bytes()
                                   .array(GgufType::Array, 2)
                                   .array(GgufType::I16, 2)
                                   .i16(-1)
                                   .i16(7)
                                   .array(GgufType::U8, 0)));
  spec.entries.push_back(entry("x.flag", GgufType::Bool, Bytes().u8(1)));
  spec.tensors.push_back(f32Tensor("token_embd.weight", {4, 3}));
  spec.tensors.push_back(
      {"blk.0.attn_q.weight", {64, 2}, typeNum(GgmlType::Q8_0),
       pattern(4 * 34, 7)});
  spec.tensors.push_back(
      {"output.weight", {256}, typeNum(GgmlType::Q4_K), pattern(144, 9)});
  return build(spec);
}

//===----------------------------------------------------------------------===//
// Parsing valid files
//===----------------------------------------------------------------------===//

TEST(GgufTest, ParsesEveryMetadataType) {
  ImageSpec spec;
  spec.entries = {
      entry("t.u8", GgufType::U8, Bytes().u8(200)),
      entry("t.i8", GgufType::I8, Bytes().i8(-100)),
      entry("t.u16", GgufType::U16, Bytes().u16(65000)),
      entry("t.i16", GgufType::I16, Bytes().i16(-30000)),
      entry("t.u32", GgufType::U32, Bytes().u32(4000000000u)),
      entry("t.i32", GgufType::I32, Bytes().i32(-2000000000)),
      entry("t.f32", GgufType::F32, Bytes().f32(1.5f)),
      entry("t.bool", GgufType::Bool, Bytes().u8(1)),
      entry("t.false", GgufType::Bool, Bytes().u8(0)),
      entry("t.string", GgufType::String, Bytes().str("h\xc3\xa9llo")),
      entry("t.empty", GgufType::String, Bytes().str("")),
      entry("t.array", GgufType::Array,
            Bytes().array(GgufType::I32, 3).i32(1).i32(-2).i32(3)),
      entry("t.u64", GgufType::U64, Bytes().u64(0xfedcba9876543210ull)),
      entry("t.i64", GgufType::I64, Bytes().i64(-(int64_t(1) << 62))),
      entry("t.f64", GgufType::F64, Bytes().f64(-0.1)),
  };
  Image image = build(spec);
  auto r = parse(image.bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  GgufFile &f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.path(), "x.gguf");
  EXPECT_TRUE(f.tensors().empty());
  ASSERT_EQ(f.metadata().size(), spec.entries.size());
  const char *order[] = {"t.u8",    "t.i8",    "t.u16",    "t.i16",
                         "t.u32",   "t.i32",   "t.f32",    "t.bool",
                         "t.false", "t.string", "t.empty", "t.array",
                         "t.u64",   "t.i64",   "t.f64"};
  for (size_t i = 0; i < f.metadata().size(); ++i)
    EXPECT_EQ(f.metadata()[i].first, order[i]);

  const GgufValue *v = f.find("t.u8");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->type, GgufType::U8);
  EXPECT_EQ(v->u, 200u);
  EXPECT_EQ(v->i, 200);
  EXPECT_TRUE(v->isInteger());
  EXPECT_EQ(f.find("t.i8")->i, -100);
  EXPECT_EQ(f.find("t.i8")->type, GgufType::I8);
  EXPECT_EQ(f.find("t.u16")->u, 65000u);
  EXPECT_EQ(f.find("t.i16")->i, -30000);
  EXPECT_EQ(f.find("t.u32")->u, 4000000000u);
  EXPECT_EQ(f.find("t.i32")->i, -2000000000);
  EXPECT_EQ(f.find("t.f32")->f, 1.5);
  EXPECT_TRUE(f.find("t.f32")->isFloat());
  EXPECT_FALSE(f.find("t.f32")->isInteger());
  EXPECT_EQ(f.find("t.bool")->type, GgufType::Bool);
  EXPECT_EQ(f.find("t.bool")->i, 1);
  EXPECT_EQ(f.find("t.false")->i, 0);
  EXPECT_EQ(f.find("t.string")->str, "h\xc3\xa9llo");
  EXPECT_EQ(f.find("t.empty")->str, "");
  const GgufValue *arr = f.find("t.array");
  ASSERT_NE(arr, nullptr);
  EXPECT_EQ(arr->type, GgufType::Array);
  EXPECT_EQ(arr->elementType, GgufType::I32);
  ASSERT_EQ(arr->array.size(), 3u);
  EXPECT_EQ(arr->array[0].i, 1);
  EXPECT_EQ(arr->array[1].i, -2);
  EXPECT_EQ(arr->array[2].i, 3);
  EXPECT_EQ(arr->array[1].type, GgufType::I32);
  EXPECT_EQ(f.find("t.u64")->u, 0xfedcba9876543210ull);
  EXPECT_EQ(f.find("t.i64")->i, -(int64_t(1) << 62));
  EXPECT_EQ(f.find("t.f64")->f, -0.1);
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.tensor("missing"), nullptr);

  EXPECT_EQ(f.find("t.i8")->asNumber(), -100.0);
  EXPECT_EQ(f.find("t.u64")->asNumber(), 18364758544493064720.0);
  EXPECT_EQ(f.find("t.bool")->asNumber(), 1.0);
  EXPECT_EQ(f.find("t.f64")->asNumber(), -0.1);
  EXPECT_FALSE(f.find("t.string")->asNumber());
  EXPECT_FALSE(f.find("t.array")->asNumber());
}

TEST(GgufTest, TypedGetters) {
  ImageSpec spec;
  spec.entries = {
      entry("name", GgufType::String, Bytes().str("tiny")),
      entry("layers", GgufType::U32, Bytes().u32(12)),
      entry("neg", GgufType::I64, Bytes().i64(-5)),
      entry("huge", GgufType::U64, Bytes().u64(~uint64_t(0))),
      entry("eps", GgufType::F32, Bytes().f32(1e-5f)),
      entry("flag", GgufType::Bool, Bytes().u8(0)),
      entry("list", GgufType::Array, Bytes().array(GgufType::U8, 1).u8(3)),
  };
  auto r = parse(build(spec).bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  GgufFile &f = **r;
  EXPECT_EQ(f.getString("name"), std::optional<std::string>("tiny"));
  EXPECT_FALSE(f.getString("layers"));
  EXPECT_FALSE(f.getString("missing"));
  EXPECT_EQ(f.getInt("layers"), std::optional<int64_t>(12));
  EXPECT_EQ(f.getInt("neg"), std::optional<int64_t>(-5));
  EXPECT_FALSE(f.getInt("huge")) << "does not fit in int64";
  EXPECT_FALSE(f.getInt("eps"));
  EXPECT_FALSE(f.getInt("flag"));
  EXPECT_FALSE(f.getInt("name"));
  EXPECT_EQ(f.getFloat("eps"), std::optional<double>(double(1e-5f)));
  EXPECT_EQ(f.getFloat("layers"), std::optional<double>(12.0));
  EXPECT_EQ(f.getFloat("neg"), std::optional<double>(-5.0));
  EXPECT_FALSE(f.getFloat("name"));
  EXPECT_FALSE(f.getFloat("list"));
  EXPECT_EQ(f.getBool("flag"), std::optional<bool>(false));
  EXPECT_FALSE(f.getBool("layers"));
  EXPECT_FALSE(f.getBool("missing"));
}

TEST(GgufTest, NestedArrays) {
  // [[1, 2], [], [3]] of u16, an empty array of strings, an array of arrays
  // of strings, and arrays nested the full eight levels deep.
  Bytes deep;
  for (int level = 0; level < 7; ++level)
    deep.array(GgufType::Array, 1);
  deep.array(GgufType::U8, 2).u8(4).u8(5);
  ImageSpec spec;
  spec.version = 2;
  spec.entries = {
      entry("nested", GgufType::Array,
            Bytes()
                .array(GgufType::Array, 3)
                .array(GgufType::U16, 2)
                .u16(1)
                .u16(2)
                .array(GgufType::U16, 0)
                .array(GgufType::U16, 1)
                .u16(3)),
      entry("empty", GgufType::Array, Bytes().array(GgufType::String, 0)),
      entry("strings", GgufType::Array,
            Bytes()
                .array(GgufType::Array, 2)
                .array(GgufType::String, 1)
                .str("x")
                .array(GgufType::String, 2)
                .str("")
                .str("yz")),
      entry("deep", GgufType::Array, deep),
  };
  auto r = parse(build(spec).bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  GgufFile &f = **r;
  EXPECT_EQ(f.version(), 2u);
  const GgufValue *n = f.find("nested");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->elementType, GgufType::Array);
  ASSERT_EQ(n->array.size(), 3u);
  EXPECT_EQ(n->array[0].elementType, GgufType::U16);
  ASSERT_EQ(n->array[0].array.size(), 2u);
  EXPECT_EQ(n->array[0].array[0].u, 1u);
  EXPECT_EQ(n->array[0].array[1].u, 2u);
  EXPECT_TRUE(n->array[1].array.empty());
  EXPECT_EQ(n->array[1].elementType, GgufType::U16);
  ASSERT_EQ(n->array[2].array.size(), 1u);
  EXPECT_EQ(n->array[2].array[0].u, 3u);
  const GgufValue *e = f.find("empty");
  EXPECT_EQ(e->elementType, GgufType::String);
  EXPECT_TRUE(e->array.empty());
  const GgufValue *s = f.find("strings");
  ASSERT_EQ(s->array.size(), 2u);
  EXPECT_EQ(s->array[0].array[0].str, "x");
  EXPECT_EQ(s->array[1].array[0].str, "");
  EXPECT_EQ(s->array[1].array[1].str, "yz");
  const GgufValue *d = f.find("deep");
  for (int level = 0; level < 7; ++level) {
    ASSERT_EQ(d->type, GgufType::Array);
    ASSERT_EQ(d->array.size(), 1u);
    d = &d->array[0];
  }
  EXPECT_EQ(d->elementType, GgufType::U8);
  ASSERT_EQ(d->array.size(), 2u);
  EXPECT_EQ(d->array[1].u, 5u);
}

/// Checks that every tensor of `spec` parsed back into `f` with the right
/// shape, size and data.
void expectTensors(const GgufFile &f, const ImageSpec &spec,
                   const Image &image) {
  ASSERT_EQ(f.tensors().size(), spec.tensors.size());
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const TensorSpec &want = spec.tensors[i];
    const GgufTensor &t = f.tensors()[i];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(t.name, want.name);
    EXPECT_EQ(f.tensor(want.name), &t);
    EXPECT_EQ(typeNum(t.type), want.type);
    ASSERT_EQ(t.dims.size(), want.dims.size());
    int64_t n = 1;
    for (size_t d = 0; d < want.dims.size(); ++d) {
      EXPECT_EQ(t.dims[d], static_cast<int64_t>(want.dims[d]));
      n *= t.dims[d];
    }
    EXPECT_EQ(t.numElements, n);
    EXPECT_EQ(t.offset, image.offsets[i]);
    EXPECT_EQ(t.bytes, want.data.size());
    EXPECT_EQ(t.data, image.bytes.data() + image.dataStart + t.offset);
    EXPECT_EQ((t.data - image.bytes.data()) % f.alignment(), 0);
    EXPECT_EQ(std::memcmp(t.data, want.data.data(), want.data.size()), 0);
  }
}

ImageSpec severalTensors(uint64_t alignment) {
  ImageSpec spec;
  spec.alignment = alignment;
  spec.entries.push_back(
      entry("general.name", GgufType::String, Bytes().str("several")));
  if (alignment != 32)
    spec.entries.push_back(entry("general.alignment", GgufType::U32,
                                 Bytes().u32(static_cast<uint32_t>(alignment))));
  spec.tensors = {
      f32Tensor("a", {3, 5}), // 60 bytes: the next one is padded
      {"b", {7}, typeNum(GgmlType::F16), pattern(14, 2)},
      {"c", {32, 2, 1, 2}, typeNum(GgmlType::Q4_0), pattern(4 * 18, 3)},
      {"d", {64}, typeNum(GgmlType::Q8_0), pattern(2 * 34, 4)},
      {"e", {256, 2}, typeNum(GgmlType::Q4_K), pattern(2 * 144, 5)},
      {"f", {512}, typeNum(GgmlType::Q5_K), pattern(2 * 176, 6)},
      {"g", {256}, typeNum(GgmlType::Q6_K), pattern(210, 7)},
      {"h", {5, 1, 1}, typeNum(GgmlType::BF16), pattern(10, 8)},
  };
  return spec;
}

TEST(GgufTest, TensorsWithDefaultAlignment) {
  ImageSpec spec = severalTensors(32);
  Image image = build(spec);
  auto r = parse(image.bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->alignment(), 32u);
  EXPECT_EQ(image.dataStart % 32, 0u);
  EXPECT_EQ(image.offsets[1], 64u) << "60 bytes of 'a', padded to 64";
  expectTensors(**r, spec, image);
}

TEST(GgufTest, ViewsAreFoundButNotListed) {
  ImageSpec spec = severalTensors(32);
  Image image = build(spec);
  auto r = parse(image.bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  GgufFile &f = **r;
  const GgufTensor *d = f.tensor("d");
  ASSERT_NE(d, nullptr);
  GgufTensor view = *d;
  view.name = "d_view";
  view.dims.push_back(1);
  f.addView(view);
  const GgufTensor *found = f.tensor("d_view");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->data, d->data);
  EXPECT_EQ(found->dims, (std::vector<int64_t>{64, 1}));
  EXPECT_EQ(f.tensors().size(), spec.tensors.size());
  EXPECT_EQ(f.tensor("d_view_missing"), nullptr);
  // A name of the file's table is the file's tensor, view or not.
  view.name = "d";
  view.dims = {1};
  f.addView(view);
  EXPECT_EQ(f.tensor("d")->dims, (std::vector<int64_t>{64}));
}

TEST(GgufTest, TensorsWithCustomAlignment) {
  for (uint64_t alignment : {1, 8, 64, 4096}) {
    SCOPED_TRACE(alignment);
    ImageSpec spec = severalTensors(alignment);
    Image image = build(spec);
    auto r = parse(image.bytes);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ((*r)->alignment(), alignment);
    EXPECT_EQ(image.dataStart % alignment, 0u);
    expectTensors(**r, spec, image);
  }
}

TEST(GgufTest, TensorsOutOfOrderAndVersion2) {
  // Offsets need not follow the order of the infos.
  ImageSpec spec;
  spec.version = 2;
  TensorSpec late = f32Tensor("late", {8});
  late.offset = 64;
  TensorSpec early = f32Tensor("early", {8});
  early.offset = 0;
  spec.tensors = {late, early};
  Image image = build(spec);
  auto r = parse(image.bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expectTensors(**r, spec, image);
}

TEST(GgufTest, NoTensorsNeedsNoPadding) {
  ImageSpec spec;
  spec.entries.push_back(entry("k", GgufType::U8, Bytes().u8(1)));
  Image image = build(spec);
  image.bytes.resize(image.headerEnd); // no padding after the header
  auto r = parse(image.bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->getInt("k"), std::optional<int64_t>(1));
}

TEST(GgufTest, SampleImageAndDequantizeRows) {
  Image image = sampleImage();
  auto r = parse(image.bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  GgufFile &f = **r;
  EXPECT_EQ(f.getString("general.architecture"),
            std::optional<std::string>("llama"));
  EXPECT_EQ(f.find("tokenizer.ggml.tokens")->array[2].str, "bc");
  const GgufTensor *q = f.tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  // Row 1 of the Q8_0 tensor: blocks 2 and 3.
  std::vector<float> row(64);
  const uint8_t *rowData = q->data + *ggmlRowBytes(q->type, 64);
  ASSERT_TRUE(dequantizeRow(q->type, rowData, row.data(), 64).ok());
  for (int b = 0; b < 2; ++b) {
    const uint8_t *block = rowData + 34 * b;
    float d = halfToFloat(static_cast<uint16_t>(block[0] | block[1] << 8));
    for (int j = 0; j < 32; ++j)
      EXPECT_EQ(row[32 * b + j], static_cast<int8_t>(block[2 + j]) * d);
  }
}

TEST(GgufTest, OpenMapsTheFile) {
  ImageSpec spec = severalTensors(64);
  Image image = build(spec);
  std::string path = ::testing::TempDir() + "/hesper-gguf-" +
                     std::to_string(getpid()) + "-open.gguf";
  std::FILE *file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(std::fwrite(image.bytes.data(), 1, image.bytes.size(), file),
            image.bytes.size());
  ASSERT_EQ(std::fclose(file), 0);
  {
    auto r = GgufFile::open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    GgufFile &f = **r;
    EXPECT_EQ(f.path(), path);
    EXPECT_EQ(f.getString("general.name"),
              std::optional<std::string>("several"));
    ASSERT_EQ(f.tensors().size(), spec.tensors.size());
    for (size_t i = 0; i < spec.tensors.size(); ++i) {
      const GgufTensor &t = f.tensors()[i];
      EXPECT_EQ(t.offset, image.offsets[i]);
      EXPECT_EQ(std::memcmp(t.data, spec.tensors[i].data.data(), t.bytes), 0);
    }
    // The mapping is page-aligned, so the data is aligned in memory too.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(f.tensors()[0].data) % 64, 0u);
  }
  // A malformed file is unmapped and reported with its path.
  image.bytes[0] = 'X';
  file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  std::fwrite(image.bytes.data(), 1, image.bytes.size(), file);
  std::fclose(file);
  auto bad = GgufFile::open(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), path + ": bad magic (not a GGUF file)");
  std::remove(path.c_str());
}

TEST(GgufTest, OpenErrors) {
  std::string dir = ::testing::TempDir() + "/hesper-gguf-" +
                    std::to_string(getpid()) + "-dir";
  std::string missing = dir + "/missing.gguf";
  std::string empty = dir + "/empty.gguf";
  ::mkdir(dir.c_str(), 0700);
  std::FILE *file = std::fopen(empty.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  std::fclose(file);

  auto r = GgufFile::open(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(missing + ": cannot open: ", 0), 0u)
      << r.status().message();
  r = GgufFile::open(empty);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), empty + ": empty file");
  r = GgufFile::open(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir + ": not a regular file");
  std::remove(empty.c_str());
  ::rmdir(dir.c_str());
}

TEST(GgufTest, TypeTables) {
  struct Row {
    GgmlType t;
    const char *name;
    int64_t blockSize, blockBytes;
  } rows[] = {
      {GgmlType::F32, "f32", 1, 4},        {GgmlType::F16, "f16", 1, 2},
      {GgmlType::BF16, "bf16", 1, 2},      {GgmlType::Q4_0, "q4_0", 32, 18},
      {GgmlType::Q8_0, "q8_0", 32, 34},    {GgmlType::Q4_K, "q4_K", 256, 144},
      {GgmlType::Q5_K, "q5_K", 256, 176},  {GgmlType::Q6_K, "q6_K", 256, 210},
      {GgmlType::TQ1_0, "tq1_0", 256, 54}, {GgmlType::TQ2_0, "tq2_0", 256, 66},
      {GgmlType::I2_S, "i2_s", 128, 32},   {GgmlType::IQ4_NL, "iq4_nl", 32, 18},
      {GgmlType::IQ4_XS, "iq4_xs", 256, 136},
      {GgmlType::Q4_1, "q4_1", 32, 20},    {GgmlType::Q5_0, "q5_0", 32, 22},
      {GgmlType::Q5_1, "q5_1", 32, 24},
      {GgmlType::Q2_K, "q2_K", 256, 84},   {GgmlType::Q3_K, "q3_K", 256, 110},
  };
  for (const Row &row : rows) {
    EXPECT_STREQ(ggmlTypeName(row.t), row.name);
    EXPECT_EQ(ggmlBlockSize(row.t), row.blockSize) << row.name;
    EXPECT_EQ(ggmlBlockBytes(row.t), row.blockBytes) << row.name;
    EXPECT_EQ(ggmlRowBytes(row.t, 3 * row.blockSize),
              std::optional<int64_t>(3 * row.blockBytes));
    EXPECT_EQ(ggmlRowBytes(row.t, 0), std::optional<int64_t>(0));
  }
  EXPECT_FALSE(ggmlRowBytes(GgmlType::Q4_K, 255));
  EXPECT_FALSE(ggmlRowBytes(GgmlType::Q8_0, -32));
  EXPECT_FALSE(ggmlRowBytes(GgmlType::F32, std::numeric_limits<int64_t>::max()));
  EXPECT_FALSE(ggmlRowBytes(static_cast<GgmlType>(16), 256));
  // Whole tensors: rows times row bytes, plus I2_S's 32-byte trailer.
  EXPECT_EQ(ggmlTensorBytes(GgmlType::F32, {4, 3}), std::optional<int64_t>(48));
  EXPECT_EQ(ggmlTensorBytes(GgmlType::Q8_0, {64, 2, 3}),
            std::optional<int64_t>(6 * 2 * 34));
  EXPECT_EQ(ggmlTensorBytes(GgmlType::I2_S, {128, 4}),
            std::optional<int64_t>(4 * 32 + 32));
  EXPECT_FALSE(ggmlTensorBytes(GgmlType::Q8_0, {31, 2}));
  EXPECT_FALSE(ggmlTensorBytes(GgmlType::F32, {}));
  EXPECT_FALSE(ggmlTensorBytes(GgmlType::F32, {4, -1}));
  EXPECT_FALSE(ggmlTensorBytes(GgmlType::F32,
                               {1 << 20, int64_t(1) << 40, 1 << 20}));
  EXPECT_STREQ(ggufTypeName(GgufType::F64), "f64");
  EXPECT_STREQ(ggufTypeName(GgufType::Array), "array");
  EXPECT_STREQ(ggufTypeName(GgufType::Bool), "bool");
}

//===----------------------------------------------------------------------===//
// Half and bfloat16
//===----------------------------------------------------------------------===//

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(GgufTest, HalfToFloatKnownValues) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x3800), 0.5f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);  // largest finite
  EXPECT_EQ(halfToFloat(0x0400), 6.103515625e-05f); // smallest normal, 2^-14
  EXPECT_EQ(halfToFloat(0x0001), 5.9604644775390625e-08f); // 2^-24
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x03ff), std::ldexp(1023.0f, -24)); // largest subnormal
  EXPECT_EQ(halfToFloat(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(bitsOf(halfToFloat(0x0000)), 0x00000000u);
  EXPECT_EQ(bitsOf(halfToFloat(0x8000)), 0x80000000u); // -0
  EXPECT_EQ(halfToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(halfToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7c01))); // signalling payload
  EXPECT_TRUE(std::signbit(halfToFloat(0xfe00)));
}

TEST(GgufTest, HalfToFloatEveryPattern) {
  // The value of a half written from its definition: (-1)^s * 2^(e-15) *
  // (1 + m/1024) for normals and 2^-14 * m/1024 for subnormals.
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float got = halfToFloat(static_cast<uint16_t>(h));
    if (e == 31) {
      if (m == 0)
        EXPECT_TRUE(std::isinf(got)) << h;
      else
        EXPECT_TRUE(std::isnan(got)) << h;
      EXPECT_EQ(std::signbit(got), sign != 0) << h;
      continue;
    }
    double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    float want = static_cast<float>(sign ? -mag : mag);
    ASSERT_EQ(bitsOf(got), bitsOf(want)) << "half 0x" << std::hex << h;
  }
}

TEST(GgufTest, Bf16ToFloat) {
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xc040), -3.0f);
  EXPECT_EQ(bf16ToFloat(0x4049), 3.140625f);
  EXPECT_EQ(bf16ToFloat(0x0001), std::ldexp(1.0f, -133)); // f32 subnormal
  EXPECT_EQ(bf16ToFloat(0xff80), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16ToFloat(0x7fc1)));
  for (uint32_t b = 0; b <= 0xffff; b += 257)
    EXPECT_EQ(bitsOf(bf16ToFloat(static_cast<uint16_t>(b))), b << 16);
}

//===----------------------------------------------------------------------===//
// Dequantization
//===----------------------------------------------------------------------===//

void putHalf(std::vector<uint8_t> &block, size_t at, uint16_t h) {
  block[at] = static_cast<uint8_t>(h);
  block[at + 1] = static_cast<uint8_t>(h >> 8);
}

std::vector<float> dequant(GgmlType t, const std::vector<uint8_t> &src,
                           int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), -12345.0f);
  Status s = dequantizeRow(t, src.data(), out.data(), n);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

void expectBitsEqual(const std::vector<float> &got,
                     const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(bitsOf(got[i]), bitsOf(want[i]))
        << "element " << i << ": " << got[i] << " vs " << want[i];
}

TEST(GgufTest, DequantizeFloats) {
  std::vector<uint8_t> f32 = f32Bytes({1.5f, -0.0f, 3e38f, 1e-45f});
  expectBitsEqual(dequant(GgmlType::F32, f32, 4), {1.5f, -0.0f, 3e38f, 1e-45f});

  std::vector<uint8_t> f16 = Bytes().u16(0x3c00).u16(0xc000).u16(0x0001).b;
  expectBitsEqual(dequant(GgmlType::F16, f16, 3),
                  {1.0f, -2.0f, std::ldexp(1.0f, -24)});

  std::vector<uint8_t> bf16 = Bytes().u16(0x3f80).u16(0xc040).b;
  expectBitsEqual(dequant(GgmlType::BF16, bf16, 2), {1.0f, -3.0f});
}

TEST(GgufTest, DequantizeQ8_0) {
  // d = 0.5: x = q / 2.
  std::vector<uint8_t> block(34);
  putHalf(block, 0, 0x3800);
  for (int j = 0; j < 32; ++j)
    block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(4 * j - 64));
  block[2] = 0x80; // -128
  block[3] = 0x7f; // 127
  std::vector<float> got = dequant(GgmlType::Q8_0, block, 32);
  EXPECT_EQ(got[0], -64.0f);
  EXPECT_EQ(got[1], 63.5f);
  for (int j = 2; j < 32; ++j)
    EXPECT_EQ(got[j], (4 * j - 64) / 2.0f) << j;

  // An inexact d over two blocks: q * d rounded once, as a float product.
  std::vector<uint8_t> two(68);
  putHalf(two, 0, 0x2e66);
  putHalf(two, 34, 0xb555);
  for (int j = 0; j < 32; ++j) {
    two[2 + j] = static_cast<uint8_t>(j * 9);
    two[36 + j] = static_cast<uint8_t>(255 - j * 5);
  }
  std::vector<float> want(64);
  for (int j = 0; j < 32; ++j) {
    want[j] = float(int8_t(two[2 + j])) * halfToFloat(0x2e66);
    want[32 + j] = float(int8_t(two[36 + j])) * halfToFloat(0xb555);
  }
  expectBitsEqual(dequant(GgmlType::Q8_0, two, 64), want);
}

TEST(GgufTest, DequantizeQ4_0) {
  // d = -0.25; byte j = j | (15 - j) << 4: element j is (j - 8) * d and
  // element j + 16 is (15 - j - 8) * d.
  std::vector<uint8_t> block(18);
  putHalf(block, 0, 0xb400);
  for (int j = 0; j < 16; ++j)
    block[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  std::vector<float> got = dequant(GgmlType::Q4_0, block, 32);
  EXPECT_EQ(got[0], 2.0f);    // (0 - 8) * -0.25
  EXPECT_EQ(got[8], 0.0f);    // (8 - 8) * -0.25
  EXPECT_EQ(got[15], -1.75f); // (15 - 8) * -0.25
  EXPECT_EQ(got[16], -1.75f); // (15 - 8) * -0.25
  EXPECT_EQ(got[31], 2.0f);   // (0 - 8) * -0.25
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(got[j], (j - 8) * -0.25f) << j;
    EXPECT_EQ(got[j + 16], (7 - j) * -0.25f) << j;
  }
}

TEST(GgufTest, DequantizeQ4_1) {
  // d = -0.25, m = 1.5; byte j = j | (15 - j) << 4: element j is
  // j * d + m, element j + 16 is (15 - j) * d + m.
  std::vector<uint8_t> block(20);
  putHalf(block, 0, 0xb400);
  putHalf(block, 2, 0x3e00);
  for (int j = 0; j < 16; ++j)
    block[4 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  std::vector<float> got = dequant(GgmlType::Q4_1, block, 32);
  EXPECT_EQ(got[0], 1.5f);     // 0 * -0.25 + 1.5
  EXPECT_EQ(got[15], -2.25f);  // 15 * -0.25 + 1.5
  EXPECT_EQ(got[16], -2.25f);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(got[j], j * -0.25f + 1.5f) << j;
    EXPECT_EQ(got[j + 16], (15 - j) * -0.25f + 1.5f) << j;
  }
}

TEST(GgufTest, DequantizeQ5_0AndQ5_1) {
  // d = 0.5 (and m = -2 for q5_1); the fifth bits 0xf0f0a5c3 (bit j for
  // element j); byte j = j | (15 - j) << 4. Element j's 5-bit q is
  // j | bit j << 4, element j + 16's (15 - j) | bit (j + 16) << 4; q5_0's
  // value is (q - 16) * d, q5_1's q * d + m.
  const uint32_t fifth = 0xf0f0a5c3u;
  std::vector<uint8_t> q50(22), q51(24);
  putHalf(q50, 0, 0x3800);
  putHalf(q51, 0, 0x3800);
  putHalf(q51, 2, 0xc000);
  for (int i = 0; i < 4; ++i) {
    q50[2 + i] = static_cast<uint8_t>(fifth >> (8 * i));
    q51[4 + i] = static_cast<uint8_t>(fifth >> (8 * i));
  }
  for (int j = 0; j < 16; ++j) {
    q50[6 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
    q51[8 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  }
  std::vector<float> got0 = dequant(GgmlType::Q5_0, q50, 32);
  std::vector<float> got1 = dequant(GgmlType::Q5_1, q51, 32);
  EXPECT_EQ(got0[0], 0.0f);   // q = 0 | 1 << 4 = 16: (16 - 16) * 0.5
  EXPECT_EQ(got0[2], -7.0f);  // q = 2 (bit 2 clear): (2 - 16) * 0.5
  EXPECT_EQ(got1[31], 6.0f);  // q = 0 | 1 << 4 = 16: 16 * 0.5 - 2
  for (int j = 0; j < 32; ++j) {
    int nibble = j < 16 ? j : 31 - j;
    int q = nibble | static_cast<int>((fifth >> j) & 1) << 4;
    EXPECT_EQ(got0[j], (q - 16) * 0.5f) << j;
    EXPECT_EQ(got1[j], q * 0.5f - 2.0f) << j;
  }
}

TEST(GgufTest, DequantizeQ2_K) {
  // Code bytes 0xe4 (bits 2j hold j) everywhere but byte 32 + 5 (0xff:
  // code 3 at every j); sub-block i's scale byte i | (15 - i) << 4;
  // d = 0.5, dmin = 0.25. Value v = 128 n + 32 j + l has code j (3 where
  // n = 1, l = 5), scale v / 16 and min 15 - v / 16.
  std::vector<uint8_t> block(84);
  for (int i = 0; i < 16; ++i)
    block[i] = static_cast<uint8_t>(i | (15 - i) << 4);
  for (int c = 0; c < 64; ++c)
    block[16 + c] = 0xe4;
  block[16 + 32 + 5] = 0xff;
  putHalf(block, 80, 0x3800);
  putHalf(block, 82, 0x3400);
  std::vector<float> got = dequant(GgmlType::Q2_K, block, 256);
  for (int v = 0; v < 256; ++v) {
    int n = v / 128, j = (v % 128) / 32, l = v % 32, i = v / 16;
    int q = (n == 1 && l == 5) ? 3 : j;
    EXPECT_EQ(got[v], 0.5f * float(i) * float(q) - 0.25f * float(15 - i))
        << v;
  }
  EXPECT_EQ(got[0], -3.75f);        // q 0, scale 0, min 15
  EXPECT_EQ(got[128 + 5], 10.25f);  // q 3, scale 8, min 7: 12 - 1.75
}

TEST(GgufTest, DequantizeQ3_K) {
  // Codes as in DequantizeQ2_K (j everywhere, 3 at byte 32 + 5), written
  // at byte 32; hmask byte 7 = 0xa5 (bits 0, 2, 5, 7: (n, j) = (0, 0),
  // (0, 2), (1, 1), (1, 3)), the others 0; sub-block i's 6-bit scale
  // 32 + i - 8, packed (low four bits in byte i % 8, the low nibble for
  // i < 8; top two bits in byte 8 + i % 4 at bit 2 (i / 4)); d = 0.5.
  // Value v = 128 n + 32 j + l is 0.5 (i - 8) (q + 4 bit - 4).
  std::vector<uint8_t> block(110);
  block[7] = 0xa5;
  for (int c = 0; c < 64; ++c)
    block[32 + c] = 0xe4;
  block[32 + 32 + 5] = 0xff;
  for (int i = 0; i < 16; ++i) {
    int scale = 32 + i - 8;
    block[96 + i % 8] |= static_cast<uint8_t>((scale & 0xf) << (4 * (i / 8)));
    block[96 + 8 + i % 4] |= static_cast<uint8_t>((scale >> 4) << (2 * (i / 4)));
  }
  putHalf(block, 108, 0x3800);
  std::vector<float> got = dequant(GgmlType::Q3_K, block, 256);
  for (int v = 0; v < 256; ++v) {
    int n = v / 128, j = (v % 128) / 32, l = v % 32, i = v / 16;
    int q = (n == 1 && l == 5) ? 3 : j;
    int bit = (l == 7 && ((0xa5 >> (4 * n + j)) & 1)) ? 1 : 0;
    EXPECT_EQ(got[v], 0.5f * float(i - 8) * float(q + 4 * bit - 4)) << v;
  }
  EXPECT_EQ(got[7], 0.0f);      // n 0, j 0, bit set: q 0, 0 - 0
  EXPECT_EQ(got[0], 16.0f);     // q 0, no bit: -4; scale i 0: -8; 0.5*-8*-4
  EXPECT_EQ(got[64 + 7], -4.0f);  // j 2, bit set: q 2; scale i 4: -4
}

TEST(GgufTest, DequantizeIQ4_NL) {
  // d = -0.25; byte j = j | (15 - j) << 4: element j is table[j] * d and
  // element j + 16 is table[15 - j] * d, with ggml's table written out.
  const int table[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                         1,    13,   25,  38,  53,  69,  89,  113};
  std::vector<uint8_t> block(18);
  putHalf(block, 0, 0xb400);
  for (int j = 0; j < 16; ++j)
    block[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  std::vector<float> got = dequant(GgmlType::IQ4_NL, block, 32);
  EXPECT_EQ(got[0], 31.75f);   // -127 * -0.25
  EXPECT_EQ(got[8], -0.25f);   // 1 * -0.25
  EXPECT_EQ(got[16], -28.25f); // 113 * -0.25
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(got[j], table[j] * -0.25f) << j;
    EXPECT_EQ(got[j + 16], table[15 - j] * -0.25f) << j;
  }
}

TEST(GgufTest, DequantizeIQ4_XS) {
  // d = 0.5; sub-block ib has ls = 32 + ib - 3 (so ls - 32 runs -3..4,
  // through 0) stored as low nibbles in scales_l and high bit pairs in
  // scales_h; its quant byte j = (j + ib) % 16 | (15 - j) << 4. Element
  // 32 ib + j is 0.5 * (ib - 3) * table[(j + ib) % 16], element
  // 32 ib + 16 + j is 0.5 * (ib - 3) * table[15 - j].
  const int table[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                         1,    13,   25,  38,  53,  69,  89,  113};
  std::vector<uint8_t> block(136);
  putHalf(block, 0, 0x3800);
  unsigned high = 0;
  for (int ib = 0; ib < 8; ++ib) {
    int ls = 32 + ib - 3;
    block[4 + ib / 2] |= static_cast<uint8_t>((ls & 0xf) << (4 * (ib % 2)));
    high |= static_cast<unsigned>(ls >> 4) << (2 * ib);
    for (int j = 0; j < 16; ++j)
      block[8 + 16 * ib + j] =
          static_cast<uint8_t>((j + ib) % 16 | (15 - j) << 4);
  }
  block[2] = high & 0xff;
  block[3] = high >> 8;
  std::vector<float> got = dequant(GgmlType::IQ4_XS, block, 256);
  for (int ib = 0; ib < 8; ++ib)
    for (int j = 0; j < 16; ++j) {
      float dl = 0.5f * static_cast<float>(ib - 3);
      EXPECT_EQ(got[32 * ib + j], dl * table[(j + ib) % 16]) << ib << " " << j;
      EXPECT_EQ(got[32 * ib + 16 + j], dl * table[15 - j]) << ib << " " << j;
    }
  EXPECT_EQ(got[0], 190.5f);       // -1.5 * -127
  EXPECT_EQ(got[3 * 32 + 5], 0.0f); // sub-block 3: ls - 32 = 0
  EXPECT_EQ(got[255], -254.0f);     // 2 * -127
}

/// Packs eight 6-bit scales and mins into the 12 bytes of a Q4_K or Q5_K
/// block (the inverse of the unpacking, as ggml's quantizer writes it).
std::vector<uint8_t> packScales(const int sc[8], const int mn[8]) {
  std::vector<uint8_t> p(12);
  for (int j = 0; j < 4; ++j) {
    p[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    p[j + 4] = static_cast<uint8_t>(mn[j] | (mn[j + 4] >> 4) << 6);
    p[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
  }
  return p;
}

/// Where element e (0..255) of a Q4_K/Q5_K block keeps its low nibble: runs
/// of 64 elements share 32 bytes, the first 32 in the low nibbles.
size_t kNibbleByte(int e) { return 32 * (e / 64) + e % 32; }
bool kNibbleHigh(int e) { return e % 64 >= 32; }

TEST(GgufTest, DequantizeQ4_KScaleUnpacking) {
  // Literal scale bytes; the scales and mins they hold, unpacked by hand:
  //   j < 4: scale = byte[j] & 63, min = byte[j + 4] & 63
  //   j >= 4: scale = (byte[j + 4] & 15) | (byte[j - 4] >> 6) << 4
  //           min   = (byte[j + 4] >> 4) | (byte[j] >> 6) << 4
  //   j=4: scale = 0xA | 3 << 4 = 58, min = 0x9 | 2 << 4 = 41
  //   j=5: scale = 0xB | 1 << 4 = 27, min = 0x0 | 0 << 4 = 0
  //   j=6: scale = 0x0 | 0 << 4 = 0,  min = 0xF | 1 << 4 = 31
  //   j=7: scale = 0x1 | 3 << 4 = 49, min = 0x2 | 0 << 4 = 2
  const uint8_t scaleBytes[12] = {0xC1, 0x42, 0x03, 0xFF, 0x85, 0x06,
                                  0x47, 0x3F, 0x9A, 0x0B, 0xF0, 0x21};
  const int scale[8] = {1, 2, 3, 63, 58, 27, 0, 49};
  const int min[8] = {5, 6, 7, 63, 41, 0, 31, 2};
  std::vector<uint8_t> block(144, 0);
  putHalf(block, 0, 0x4000); // d = 2
  putHalf(block, 2, 0x3c00); // dmin = 1
  std::copy(scaleBytes, scaleBytes + 12, block.begin() + 4);
  uint8_t *qs = block.data() + 16;
  qs[0] = 0x3A;   // element 0: 10, element 32: 3
  qs[32] = 0xF1;  // element 64: 1, element 96: 15
  qs[127] = 0x7C; // element 223: 12, element 255: 7
  std::vector<float> got = dequant(GgmlType::Q4_K, block, 256);
  EXPECT_EQ(got[0], 15.0f);    // 2*1*10 - 5
  EXPECT_EQ(got[1], -5.0f);    // 2*1*0 - 5
  EXPECT_EQ(got[32], 6.0f);    // 2*2*3 - 6
  EXPECT_EQ(got[64], -1.0f);   // 2*3*1 - 7
  EXPECT_EQ(got[96], 1827.0f); // 2*63*15 - 63
  EXPECT_EQ(got[128], -41.0f); // 2*58*0 - 41
  EXPECT_EQ(got[160], 0.0f);   // 2*27*0 - 0
  EXPECT_EQ(got[223], -31.0f); // 2*0*12 - 31
  EXPECT_EQ(got[255], 684.0f); // 2*49*7 - 2
  for (int e = 0; e < 256; ++e) {
    int q = kNibbleHigh(e) ? qs[kNibbleByte(e)] >> 4 : qs[kNibbleByte(e)] & 15;
    EXPECT_EQ(got[e], 2.0f * scale[e / 32] * q - min[e / 32]) << e;
  }
  // Packing those scales and mins gives back the literal bytes.
  EXPECT_EQ(packScales(scale, min),
            std::vector<uint8_t>(scaleBytes, scaleBytes + 12));
}

TEST(GgufTest, DequantizeQ4_K) {
  // Two blocks with inexact d and dmin, every nibble value, all scales.
  const int sc[2][8] = {{1, 63, 17, 32, 45, 60, 2, 33},
                        {0, 5, 63, 48, 16, 31, 7, 62}};
  const int mn[2][8] = {{0, 63, 5, 48, 16, 31, 40, 1},
                        {9, 0, 33, 63, 2, 17, 60, 30}};
  const uint16_t d[2] = {0x2e66, 0x1a3f}, dmin[2] = {0x2155, 0x0123};
  std::vector<uint8_t> blocks(2 * 144, 0);
  std::vector<float> want(512);
  for (int b = 0; b < 2; ++b) {
    uint8_t *block = blocks.data() + 144 * b;
    block[0] = d[b] & 0xff, block[1] = d[b] >> 8;
    block[2] = dmin[b] & 0xff, block[3] = dmin[b] >> 8;
    std::vector<uint8_t> packed = packScales(sc[b], mn[b]);
    std::copy(packed.begin(), packed.end(), block + 4);
    for (int e = 0; e < 256; ++e) {
      int q = (e * 7 + b * 3 + e / 16) % 16;
      uint8_t &byte = block[16 + kNibbleByte(e)];
      byte |= static_cast<uint8_t>(kNibbleHigh(e) ? q << 4 : q);
      // The float operations of the format: scale and min are each
      // multiplied by their f16 super-scale first, in float.
      float d1 = halfToFloat(d[b]) * sc[b][e / 32];
      float m1 = halfToFloat(dmin[b]) * mn[b][e / 32];
      want[256 * b + e] = d1 * q - m1;
    }
  }
  expectBitsEqual(dequant(GgmlType::Q4_K, blocks, 512), want);
}

TEST(GgufTest, DequantizeQ5_K) {
  // Literal: d = 1, dmin = 0, every scale 1. High bits: qh[0] bit 0 is
  // element 0, qh[0] bit 2 is element 64 (run 1, low half), qh[5] bit 7 is
  // element 192 + 32 + 5 = 229 (run 3, high half).
  {
    std::vector<uint8_t> block(176, 0);
    putHalf(block, 0, 0x3c00);
    for (int j = 0; j < 4; ++j)
      block[4 + j] = 1;  // scales of sub-blocks 0..3
    for (int j = 8; j < 12; ++j)
      block[4 + j] = 1;  // low nibble: scales of sub-blocks 4..7
    block[16 + 0] = 0x05;
    block[16 + 5] = 0x80;
    block[48 + 0] = 0x21; // element 0: 1, element 32: 2
    std::vector<float> got = dequant(GgmlType::Q5_K, block, 256);
    for (int e = 0; e < 256; ++e) {
      float want = e == 0 ? 17 : e == 32 ? 2 : e == 64 || e == 229 ? 16 : 0;
      EXPECT_EQ(got[e], want) << e;
    }
  }
  // Every 5-bit value with inexact scales.
  const int sc[8] = {3, 63, 17, 0, 45, 60, 2, 33};
  const int mn[8] = {0, 63, 5, 48, 16, 31, 40, 1};
  const uint16_t d = 0x3266, dmin = 0x2c00;
  std::vector<uint8_t> block(176, 0);
  putHalf(block, 0, d);
  putHalf(block, 2, dmin);
  std::vector<uint8_t> packed = packScales(sc, mn);
  std::copy(packed.begin(), packed.end(), block.begin() + 4);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    int q = (e * 11 + e / 32) % 32;
    uint8_t &byte = block[48 + kNibbleByte(e)];
    byte |= static_cast<uint8_t>(kNibbleHigh(e) ? (q & 15) << 4 : q & 15);
    // The fifth bit: bit 2 * run (+1 for the high half) of qh[e % 32].
    int bit = 2 * (e / 64) + (kNibbleHigh(e) ? 1 : 0);
    block[16 + e % 32] |= static_cast<uint8_t>((q >> 4) << bit);
    float d1 = halfToFloat(d) * sc[e / 32];
    float m1 = halfToFloat(dmin) * mn[e / 32];
    want[e] = d1 * q - m1;
  }
  expectBitsEqual(dequant(GgmlType::Q5_K, block, 256), want);
}

/// Where element e of a Q6_K block keeps its bits: half h = e / 128, quarter
/// g = (e % 128) / 32, l = e % 32. Low nibble in ql[64h + 32(g & 1) + l]
/// (high nibble for g >= 2); high two bits at bit 2g of qh[32h + l]; scale
/// index 8h + 2g + l / 16.
struct Q6Place {
  size_t ql, qh, scale;
  bool highNibble;
  int shift;
};
Q6Place q6Place(int e) {
  int h = e / 128, g = (e % 128) / 32, l = e % 32;
  return {static_cast<size_t>(64 * h + 32 * (g & 1) + l),
          static_cast<size_t>(128 + 32 * h + l),
          static_cast<size_t>(192 + 8 * h + 2 * g + l / 16), g >= 2, 2 * g};
}

TEST(GgufTest, DequantizeQ6_K) {
  // Literal: d = 0.5 (last two bytes), scales 1, -1, 2, -2, ..., 8, -8.
  {
    std::vector<uint8_t> block(210, 0);
    const int8_t scales[16] = {1, -1, 2, -2, 3, -3, 4, -4,
                               5, -5, 6, -6, 7, -7, 8, -8};
    std::memcpy(block.data() + 192, scales, 16);
    putHalf(block, 208, 0x3800);
    block[0] = 0x5F;         // element 0 low nibble 15, element 64 low 5
    block[128] = 0b11100100; // high bits: 0 (e0), 1 (e32), 2 (e64), 3 (e96)
    std::vector<float> got = dequant(GgmlType::Q6_K, block, 256);
    EXPECT_EQ(got[0], -8.5f);   // 0.5 * 1 * (15 - 32)
    EXPECT_EQ(got[32], -16.0f); // 0.5 * 2 * (16 - 32)
    EXPECT_EQ(got[64], 7.5f);   // 0.5 * 3 * (5 + 32 - 32)
    EXPECT_EQ(got[96], 32.0f);  // 0.5 * 4 * (48 - 32)
    EXPECT_EQ(got[1], -16.0f);  // 0.5 * 1 * (0 - 32)
    EXPECT_EQ(got[16], 16.0f);  // 0.5 * -1 * (0 - 32)
    EXPECT_EQ(got[128], -80.0f); // 0.5 * 5 * (0 - 32)
    EXPECT_EQ(got[255], 128.0f); // 0.5 * -8 * (0 - 32)
  }
  // Every 6-bit value, two blocks, inexact d.
  const uint16_t d[2] = {0x2e66, 0x9a3f};
  std::vector<uint8_t> blocks(420, 0);
  std::vector<float> want(512);
  for (int b = 0; b < 2; ++b) {
    uint8_t *block = blocks.data() + 210 * b;
    for (int s = 0; s < 16; ++s)
      block[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(
          (s * 37 + b * 11) % 256 - 128));
    block[208] = d[b] & 0xff, block[209] = d[b] >> 8;
    for (int e = 0; e < 256; ++e) {
      int q = (e * 13 + b + e / 64) % 64;
      Q6Place p = q6Place(e);
      block[p.ql] |= static_cast<uint8_t>(p.highNibble ? (q & 15) << 4 : q & 15);
      block[p.qh] |= static_cast<uint8_t>((q >> 4) << p.shift);
      float ds = halfToFloat(d[b]) * static_cast<int8_t>(block[p.scale]);
      want[256 * b + e] = ds * (q - 32);
    }
  }
  expectBitsEqual(dequant(GgmlType::Q6_K, blocks, 512), want);
}

// Ternary blocks built by hand. One byte of each holds the codes
// (2, 0, 1, 2[, 0]) so that its elements are +d, -d, 0, +d[, -d]; every
// other byte holds all-1 codes (zeros).
TEST(GgufTest, DequantizeTQ2_0) {
  // d = 0.5; qs[0] = codes 2, 0, 1, 2 in bits 0-1, 2-3, 4-5, 6-7:
  // elements 0, 32, 64, 96. qs[33] the same: elements 128 + 1, +32, ...
  std::vector<uint8_t> block(66, 0x55);
  block[0] = 2 | 0 << 2 | 1 << 4 | 2 << 6;
  block[33] = block[0];
  putHalf(block, 64, 0x3800);
  std::vector<float> want(256, 0.0f);
  for (int base : {0, 129}) {
    want[base] = 0.5f;
    want[base + 32] = -0.5f;
    want[base + 96] = 0.5f;
  }
  expectBitsEqual(dequant(GgmlType::TQ2_0, block, 256), want);
}

TEST(GgufTest, DequantizeTQ1_0) {
  // Five digits per byte as ceil(number * 256 / 243): digits 1,1,1,1,1
  // (121) are 0x80, digits 2,0,1,2,0 (177) are 187. qh holds four digits
  // and a zero fifth: 1,1,1,1,0 (120) is 0x7f, 2,0,1,2,0 is again 187.
  std::vector<uint8_t> block(54, 0x80);
  for (int j = 48; j < 52; ++j)
    block[j] = 0x7f;
  block[0] = 187;  // elements 0, 32, 64, 96, 128
  block[32] = 187; // elements 160, 176, 192, 208, 224
  block[48] = 187; // elements 240, 244, 248, 252
  putHalf(block, 52, 0xc000); // d = -2
  std::vector<float> want(256, -0.0f);
  // (digit - 1) * d with d = -2: digit 1 gives -0.
  auto set = [&](std::initializer_list<int> at) {
    const float pattern[5] = {-2.0f, 2.0f, -0.0f, -2.0f, 2.0f};
    int i = 0;
    for (int e : at)
      want[e] = pattern[i++];
  };
  set({0, 32, 64, 96, 128});
  set({160, 176, 192, 208, 224});
  set({240, 244, 248, 252});
  expectBitsEqual(dequant(GgmlType::TQ1_0, block, 256), want);
  // The all-zero block.
  std::vector<uint8_t> zeros(54, 0x80);
  for (int j = 48; j < 52; ++j)
    zeros[j] = 0x7f;
  putHalf(zeros, 52, 0x3c00);
  expectBitsEqual(dequant(GgmlType::TQ1_0, zeros, 256),
                  std::vector<float>(256, 0.0f));
}

TEST(GgufTest, DequantizeI2_SAndItsScale) {
  // Element 32k + m is bits 7-2k..6-2k of byte m: byte 0 = codes 2, 0, 1, 2
  // from the top gives elements 0, 32, 64, 96 = +1, -1, 0, +1 (unscaled).
  std::vector<uint8_t> data(32, 0x55);
  data[0] = 2 << 6 | 0 << 4 | 1 << 2 | 2;
  std::vector<float> want(128, 0.0f);
  want[0] = 1.0f;
  want[32] = -1.0f;
  want[96] = 1.0f;
  expectBitsEqual(dequant(GgmlType::I2_S, data, 128), want);
  // The tensor's scale follows its blocks.
  std::vector<uint8_t> tensorBytes = data;
  std::vector<uint8_t> scale = f32Bytes({0.25f});
  tensorBytes.insert(tensorBytes.end(), scale.begin(), scale.end());
  tensorBytes.resize(64, 0);
  GgufTensor t;
  t.type = GgmlType::I2_S;
  t.numElements = 128;
  t.bytes = tensorBytes.size();
  t.data = tensorBytes.data();
  EXPECT_EQ(i2sScale(t), 0.25f);
  t.bytes = 33; // too short to hold the scale
  EXPECT_EQ(i2sScale(t), 0.0f);

  // In a file an I2_S tensor of n values takes n/4 + 32 bytes: one fewer
  // is a truncated tensor.
  TensorSpec spec{"w", {128, 2}, typeNum(GgmlType::I2_S), {}};
  spec.data.assign(64 + 32, 0x55);
  std::memcpy(spec.data.data() + 64, scale.data(), 4);
  Image image = build(oneTensor(spec)); // the file parse() points into
  auto r = parse(image.bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GgufTensor *w = (*r)->tensor("w");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->bytes, 96u);
  EXPECT_EQ(i2sScale(*w), 0.25f);
  spec.data.resize(95);
  EXPECT_FALSE(parse(build(oneTensor(spec)).bytes).ok());
}

TEST(GgufTest, DequantizeRowErrors) {
  std::vector<uint8_t> src(1024);
  std::vector<float> dst(1024);
  Status s = dequantizeRow(GgmlType::Q4_K, src.data(), dst.data(), 100);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("q4_K"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("100"), std::string::npos) << s.message();
  EXPECT_FALSE(dequantizeRow(GgmlType::Q8_0, src.data(), dst.data(), -32).ok());
  s = dequantizeRow(static_cast<GgmlType>(16), src.data(), dst.data(), 256);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown ggml type 16"), std::string::npos);
  EXPECT_TRUE(dequantizeRow(GgmlType::Q6_K, src.data(), dst.data(), 0).ok());
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(GgufTest, BadMagic) {
  std::vector<uint8_t> image = sampleImage().bytes;
  image[3] = 'X';
  expectError(image, {"x.gguf: bad magic (not a GGUF file)"});
  expectError({'P', 'K'}, {"bad magic"});
  expectError({}, {"empty file"});
  expectError({'G', 'G', 'U'}, {"truncated in the header"});
}

TEST(GgufTest, UnsupportedVersions) {
  for (uint32_t version : {0u, 1u, 4u, 0x03000000u}) {
    ImageSpec spec;
    spec.version = version;
    expectError(build(spec).bytes,
                {"unsupported GGUF version " + std::to_string(version)});
  }
  ImageSpec v1;
  v1.version = 1;
  expectError(build(v1).bytes, {"version 1", "obsolete"});
  ImageSpec bigEndian;
  bigEndian.version = 0x03000000;
  expectError(build(bigEndian).bytes, {"big-endian"});
}

TEST(GgufTest, TruncatedAtEveryByte) {
  Image image = sampleImage();
  ASSERT_TRUE(parse(image.bytes).ok());
  for (size_t len = 0; len < image.bytes.size(); ++len) {
    // An exact-size copy, so that ASan catches a read past the end.
    std::unique_ptr<uint8_t[]> copy(new uint8_t[len ? len : 1]);
    std::memcpy(copy.get(), image.bytes.data(), len);
    auto r = GgufFile::parse(copy.get(), len, "x.gguf");
    ASSERT_FALSE(r.ok()) << "a prefix of " << len << " bytes parsed";
    const std::string &msg = r.status().message();
    ASSERT_EQ(msg.rfind("x.gguf: ", 0), 0u) << msg;
    ASSERT_GT(msg.size(), 8u);
    ASSERT_EQ(msg.find('\n'), std::string::npos) << msg;
    const char *want = len == 0                 ? "empty file"
                       : len < image.headerEnd ? "truncated in "
                                               : "lies outside the file";
    ASSERT_NE(msg.find(want), std::string::npos)
        << len << " bytes: " << msg;
  }
}

TEST(GgufTest, TruncationMessagesNameThePlace) {
  ImageSpec spec;
  spec.entries = {
      entry("general.architecture", GgufType::String, Bytes().str("llama")),
      entry("general.file_type", GgufType::U32, Bytes().u32(15)),
      entry("general.quantization_version", GgufType::U32, Bytes().u32(2)),
      entry("general.name", GgufType::String, Bytes().str("xyz"))};
  spec.tensors = {f32Tensor("blk.0.attn_q.weight", {4})};
  Image image = build(spec);
  size_t entry3 = 24;
  for (int i = 0; i < 3; ++i)
    entry3 += spec.entries[i].size();
  std::vector<uint8_t> bytes = image.bytes;
  bytes.resize(entry3 + 4); // inside the key's length
  expectError(bytes, {"x.gguf: truncated in the key of metadata entry 3"});
  bytes = image.bytes;
  bytes.resize(entry3 + 8 + 12 + 2); // inside the value type
  expectError(bytes,
              {"x.gguf: truncated in metadata entry 3 ('general.name')"});
  bytes = image.bytes;
  bytes.resize(entry3 + 8 + 12 + 4 + 8 + 2); // inside the string
  expectError(bytes,
              {"x.gguf: truncated in metadata entry 3 ('general.name'): a "
               "string of 3 bytes, 2 remain"});
  bytes = image.bytes;
  bytes.resize(image.headerEnd - 3); // inside the offset
  expectError(bytes,
              {"x.gguf: truncated in tensor info 0 ('blk.0.attn_q.weight')"});
  bytes = image.bytes;
  bytes.resize(image.bytes.size() - 1);
  expectError(bytes,
              {"x.gguf: tensor 'blk.0.attn_q.weight' data [" +
               std::to_string(image.dataStart) + ", " +
               std::to_string(image.dataStart + 16) +
               ") lies outside the file (size " +
               std::to_string(image.bytes.size() - 1) + ")"});
}

TEST(GgufTest, AbsurdStringLength) {
  ImageSpec spec;
  spec.entries = {entry("k", GgufType::String,
                        Bytes().u64(uint64_t(1) << 60).raw({'a', 'b'}))};
  expectError(build(spec).bytes,
              {"truncated in metadata entry 0 ('k')",
               "string of 1152921504606846976 bytes"});
  // A key of absurd length.
  spec.entries = {Bytes().u64(~uint64_t(0)).u32(0).u8(0).b};
  expectError(build(spec).bytes,
              {"truncated in the key of metadata entry 0",
               "string of 18446744073709551615 bytes"});
  // A tensor name of absurd length (with room for one tensor info after
  // the header, so the tensor count passes).
  std::vector<uint8_t> image = Bytes()
                                   .raw({'G', 'G', 'U', 'F'})
                                   .u32(3)
                                   .u64(1)
                                   .u64(0)
                                   .u64(uint64_t(1) << 62)
                                   .raw(std::vector<uint8_t>(32, 0))
                                   .b;
  expectError(image, {"truncated in the name of tensor info 0",
                      "string of 4611686018427387904 bytes"});
}

TEST(GgufTest, AbsurdArrayCount) {
  ImageSpec spec;
  spec.entries = {entry("arr", GgufType::Array,
                        Bytes().array(GgufType::U32, uint64_t(1) << 61).u32(1))};
  expectError(build(spec).bytes,
              {"truncated in metadata entry 0 ('arr')",
               "an array of 2305843009213693952 u32 elements"});
  // Nested: the inner count is checked against the bytes left, too.
  spec.entries = {entry("arr", GgufType::Array,
                        Bytes()
                            .array(GgufType::Array, 1)
                            .array(GgufType::String, ~uint64_t(0)))};
  expectError(build(spec).bytes,
              {"an array of 18446744073709551615 string elements"});
}

TEST(GgufTest, AbsurdCounts) {
  ImageSpec spec;
  spec.tensorCount = uint64_t(1) << 59;
  expectError(build(spec).bytes, {"declares 576460752303423488 tensors"});
  spec.tensorCount.reset();
  spec.entryCount = ~uint64_t(0);
  expectError(build(spec).bytes,
              {"declares 18446744073709551615 metadata entries"});
}

TEST(GgufTest, BadDimensionCounts) {
  for (uint32_t nDims : {0u, 5u}) {
    ImageSpec spec;
    spec.tensors = {f32Tensor("t", {4})};
    Image image = build(spec);
    // n_dims follows the 8-byte length and the name "t".
    size_t at = 24 + 8 + 1;
    for (int i = 0; i < 4; ++i)
      image.bytes[at + i] = static_cast<uint8_t>(nDims >> (8 * i));
    expectError(image.bytes, {"tensor 't' has " + std::to_string(nDims) +
                              " dimensions (need 1 to 4)"});
  }
}

TEST(GgufTest, BadGgmlTypes) {
  TensorSpec t = f32Tensor("w", {32});
  t.type = 99;
  expectError(build(oneTensor(t)).bytes,
              {"tensor 'w' has unknown ggml type 99"});
  t.type = 16;
  expectError(build(oneTensor(t)).bytes,
              {"tensor 'w' has ggml type 16 (iq2_xxs), which is not supported"});
  t.type = 4; // retired
  expectError(build(oneTensor(t)).bytes, {"unknown ggml type 4"});
}

TEST(GgufTest, BadShapes) {
  TensorSpec t{"w", {100}, typeNum(GgmlType::Q4_0), pattern(100, 0)};
  expectError(build(oneTensor(t)).bytes,
              {"tensor 'w' has rows of 100 elements, not a multiple of the "
               "q4_0 block size 32"});
  t = {"k", {512, 2}, typeNum(GgmlType::Q4_K), pattern(4 * 144, 0)};
  ASSERT_TRUE(parse(build(oneTensor(t)).bytes).ok());
  t.dims = {128, 2};
  expectError(build(oneTensor(t)).bytes, {"not a multiple of the q4_K block"});
  t = f32Tensor("z", {4, 0, 2});
  expectError(build(oneTensor(t)).bytes,
              {"tensor 'z' has shape [4, 0, 2]: dimension 1 is 0"});
  t = f32Tensor("big", {4});
  t.dims = {uint64_t(1) << 32, uint64_t(1) << 32};
  expectError(build(oneTensor(t)).bytes, {"overflows int64"});
  t.dims = {uint64_t(1) << 63};
  expectError(build(oneTensor(t)).bytes, {"overflows int64"});
  // Fits in int64 elements, but the bytes overflow 64 bits.
  t.dims = {uint64_t(1) << 62};
  expectError(build(oneTensor(t)).bytes,
              {"tensor 'big' has shape [4611686018427387904]: its size in "
               "bytes overflows"});
  // 2^63 bytes: reported as outside the file.
  t.dims = {uint64_t(1) << 61};
  expectError(build(oneTensor(t)).bytes, {"lies outside the file"});
}

TEST(GgufTest, TensorOutsideFile) {
  TensorSpec t = f32Tensor("blk.0.attn_q.weight", {8});
  t.offset = uint64_t(1) << 40;
  Image image = build(oneTensor(t));
  expectError(image.bytes,
              {"x.gguf: tensor 'blk.0.attn_q.weight' data [" +
               std::to_string(image.dataStart + (uint64_t(1) << 40)) + ", " +
               std::to_string(image.dataStart + (uint64_t(1) << 40) + 32) +
               ") lies outside the file (size " +
               std::to_string(image.bytes.size()) + ")"});
  // Offsets near 2^64 do not wrap around: 2^64 - 32 + 96 = 2^64 + 64.
  t.offset = ~uint64_t(31);
  image = build(oneTensor(t));
  ASSERT_EQ(image.dataStart, 96u);
  expectError(image.bytes, {"data [18446744073709551680, "
                            "18446744073709551712) lies outside the file"});
  // One byte short.
  t.offset = kAutoOffset;
  image = build(oneTensor(t));
  image.bytes.pop_back();
  expectError(image.bytes, {"lies outside the file"});
}

TEST(GgufTest, OverlappingTensors) {
  ImageSpec spec;
  TensorSpec a = f32Tensor("a", {16}); // 64 bytes
  a.offset = 0;
  TensorSpec b = f32Tensor("b", {8});
  b.offset = 32;
  TensorSpec c = f32Tensor("c", {8});
  c.offset = 128;
  spec.tensors = {c, b, a};
  Image image = build(spec);
  std::string ds = std::to_string(image.dataStart);
  expectError(image.bytes, {"tensors 'a' [" + ds + ", " +
                            std::to_string(image.dataStart + 64) +
                            ") and 'b' [", "overlap"});
  // Same offset.
  b.offset = 0;
  spec.tensors = {a, b};
  expectError(build(spec).bytes, {"overlap"});
  // Touching is fine.
  b.offset = 64;
  spec.tensors = {a, b};
  EXPECT_TRUE(parse(build(spec).bytes).ok());
}

TEST(GgufTest, MisalignedOffset) {
  TensorSpec t = f32Tensor("w", {8});
  t.offset = 16;
  expectError(build(oneTensor(t)).bytes,
              {"tensor 'w' has offset 16, not a multiple of the alignment 32"});
  // With general.alignment = 16 the same offset is fine.
  ImageSpec spec = oneTensor(
      t, {entry("general.alignment", GgufType::U32, Bytes().u32(16))});
  spec.alignment = 16;
  EXPECT_TRUE(parse(build(spec).bytes).ok());
  spec.entries = {entry("general.alignment", GgufType::U32, Bytes().u32(64))};
  t.offset = 32;
  spec.tensors = {t};
  expectError(build(spec).bytes, {"not a multiple of the alignment 64"});
}

TEST(GgufTest, DuplicateNames) {
  ImageSpec spec;
  spec.entries = {entry("k", GgufType::U8, Bytes().u8(1)),
                  entry("j", GgufType::U8, Bytes().u8(1)),
                  entry("k", GgufType::String, Bytes().str("again"))};
  expectError(build(spec).bytes,
              {"duplicate metadata key 'k' (entries 0 and 2)"});
  spec.entries.clear();
  spec.tensors = {f32Tensor("w", {4}), f32Tensor("w", {4})};
  expectError(build(spec).bytes, {"duplicate tensor name 'w' (tensors 0 and 1)"});
}

TEST(GgufTest, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u, 0xffffffffu}) {
    ImageSpec spec;
    spec.entries = {entry("general.alignment", GgufType::U32, Bytes().u32(a))};
    expectError(build(spec).bytes,
                {"general.alignment is " + std::to_string(a) +
                 ", not a non-zero power of two"});
  }
  ImageSpec spec;
  spec.entries = {entry("general.alignment", GgufType::U64, Bytes().u64(32))};
  expectError(build(spec).bytes, {"general.alignment is a u64, not a u32"});
}

TEST(GgufTest, BadValueTypes) {
  ImageSpec spec;
  spec.entries = {entryRawType("k", 13, Bytes().u8(0))};
  expectError(build(spec).bytes,
              {"metadata entry 0 ('k') has unknown value type 13"});
  spec.entries = {entry("arr", GgufType::Array,
                        Bytes().u32(0x100).u64(0).u8(0))};
  expectError(build(spec).bytes,
              {"metadata entry 0 ('arr') has an array of unknown value type "
               "256"});
}

TEST(GgufTest, ArraysNestedTooDeep) {
  Bytes deep;
  for (int level = 0; level < 8; ++level)
    deep.array(GgufType::Array, 1);
  deep.array(GgufType::U8, 1).u8(0);
  ImageSpec spec;
  spec.entries = {entry("deep", GgufType::Array, deep)};
  expectError(build(spec).bytes,
              {"metadata entry 0 ('deep') has arrays nested more than 8 deep"});
}

TEST(GgufTest, OddNamesStayOnOneLine) {
  ImageSpec spec;
  std::string name = "bad\nname\\" + std::string(200, 'x');
  spec.entries = {entry(name, GgufType::U8, Bytes().u8(1)),
                  entry(name, GgufType::U8, Bytes().u8(1))};
  expectError(build(spec).bytes, {"'bad\\x0aname\\x5cxxx", "xxx...'"});
}

//===----------------------------------------------------------------------===//
// Random corruption
//===----------------------------------------------------------------------===//

/// Parses `bytes` (an exact-size heap copy) and checks the outcome: an error
/// of one line, or tensors that lie inside the buffer and dequantize.
/// Returns whether it parsed.
bool parseCorrupted(const std::vector<uint8_t> &bytes) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size()]);
  std::memcpy(copy.get(), bytes.data(), bytes.size());
  const uint8_t *begin = copy.get(), *end = begin + bytes.size();
  auto r = GgufFile::parse(begin, bytes.size(), "x.gguf");
  if (!r.ok()) {
    const std::string &msg = r.status().message();
    EXPECT_EQ(msg.rfind("x.gguf: ", 0), 0u) << msg;
    EXPECT_GT(msg.size(), 8u);
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return false;
  }
  const GgufFile &f = **r;
  for (const GgufTensor &t : f.tensors()) {
    EXPECT_GE(t.data, begin);
    EXPECT_LE(t.bytes, static_cast<uint64_t>(end - begin));
    EXPECT_LE(t.data + t.bytes, end) << t.name;
    EXPECT_EQ(static_cast<int64_t>(t.bytes),
              *ggmlRowBytes(t.type, t.numElements));
    // Reads every byte of the tensor (ASan checks the bounds).
    std::vector<float> out(static_cast<size_t>(t.numElements));
    EXPECT_TRUE(dequantizeRow(t.type, t.data, out.data(), t.numElements).ok());
  }
  return true;
}

TEST(GgufTest, RandomByteFlips) {
  Image image = sampleImage();
  int parsed = 0, failed = 0;
  for (uint32_t seed = 0; seed < 2000; ++seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes = image.bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      // Mostly in the header, where a flip changes the structure.
      size_t limit = rng() % 4 ? image.headerEnd : bytes.size();
      size_t at = rng() % limit;
      bytes[at] ^= static_cast<uint8_t>(1 + rng() % 255);
    }
    if (parseCorrupted(bytes))
      ++parsed;
    else
      ++failed;
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(failed, 0);
}

TEST(GgufTest, RandomOverwritesAndTruncations) {
  // Whole 8-byte fields overwritten with extreme values, and a random cut.
  Image image = sampleImage();
  const uint64_t extremes[] = {0,
                               1,
                               0xff,
                               0xffffffffull,
                               uint64_t(1) << 31,
                               uint64_t(1) << 32,
                               uint64_t(1) << 63,
                               ~uint64_t(0),
                               ~uint64_t(0) - 31};
  for (uint32_t seed = 0; seed < 2000; ++seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes = image.bytes;
    size_t at = rng() % (image.headerEnd - 8);
    uint64_t v = extremes[rng() % (sizeof(extremes) / sizeof(extremes[0]))];
    for (int i = 0; i < 8; ++i)
      bytes[at + i] = static_cast<uint8_t>(v >> (8 * i));
    if (rng() % 2)
      bytes.resize(1 + rng() % bytes.size());
    parseCorrupted(bytes);
  }
}

//===----------------------------------------------------------------------===//
// GgufWriter
//===----------------------------------------------------------------------===//

TEST(GgufTest, WriterRoundTrips) {
  GgufWriter w;
  w.addString("general.architecture", "llama");
  w.addU32("llama.block_count", 2);
  w.addI32("hesper.negative", -5);
  w.addU64("hesper.big", 1ull << 40);
  w.addF32("llama.rope.freq_base", 10000.0f);
  w.addBool("tokenizer.ggml.add_bos_token", false);
  w.addStringArray("tokenizer.ggml.tokens", {"a", "", "\xc4\xa0b"});
  w.addI32Array("tokenizer.ggml.token_type", {1, 3, 6});
  w.addF32Array("hesper.losses", {1.5f, -2.25f});
  std::vector<float> matrix(3 * 5), vector{7.0f};
  for (size_t i = 0; i < matrix.size(); ++i)
    matrix[i] = 0.25f * static_cast<float>(i) - 1.0f;
  w.addTensor("m.weight", {5, 3}, matrix.data()); // 3 rows of 5
  w.addTensor("v.weight", {1}, vector.data());
  char name[] = "/tmp/hesper-gguf-writer-XXXXXX";
  int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_TRUE(w.write(name).ok());

  auto file = GgufFile::open(name);
  ASSERT_TRUE(file.ok()) << file.status().message();
  const GgufFile &g = **file;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.getString("general.architecture"), "llama");
  EXPECT_EQ(g.getInt("llama.block_count"), 2);
  EXPECT_EQ(g.getInt("hesper.negative"), -5);
  EXPECT_EQ(g.getInt("hesper.big"), int64_t(1) << 40);
  EXPECT_EQ(g.getFloat("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(g.getBool("tokenizer.ggml.add_bos_token"), false);
  const GgufValue *tokens = g.find("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->array.size(), 3u);
  EXPECT_EQ(tokens->array[2].str, "\xc4\xa0b");
  EXPECT_EQ(g.find("tokenizer.ggml.token_type")->array[2].i, 6);
  EXPECT_EQ(g.find("hesper.losses")->array[1].f, -2.25);
  const GgufTensor *m = g.tensor("m.weight");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->dims, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(m->offset % 32, 0u);
  EXPECT_EQ(std::memcmp(m->data, matrix.data(), matrix.size() * 4), 0);
  const GgufTensor *v = g.tensor("v.weight");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->offset % 32, 0u);
  float read;
  std::memcpy(&read, v->data, 4);
  EXPECT_EQ(read, 7.0f);
  std::remove(name);

  // A directory that does not exist: one line naming the path.
  Status s = w.write("/nonexistent-dir/x.gguf");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-dir/x.gguf: cannot write"),
            std::string::npos);
}

TEST(GgufTest, WriterTakesRawTensorsAndGivesAnImage) {
  GgufWriter w;
  w.addString("general.architecture", "llama");
  // Two rows of 64 q8_0 values: two 34-byte blocks a row.
  std::vector<uint8_t> q8(2 * 2 * 34);
  for (size_t i = 0; i < q8.size(); ++i)
    q8[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(w.addRawTensor("q.weight", {64, 2}, GgmlType::Q8_0, q8).ok());
  std::vector<float> f{1.5f, -2.0f};
  w.addTensor("f.weight", {2}, f.data());

  // Bytes that are not whole rows of the type are refused.
  Status bad = w.addRawTensor("bad.weight", {64, 2}, GgmlType::Q8_0,
                              std::vector<uint8_t>(135));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("tensor 'bad.weight': 135 bytes"),
            std::string::npos)
      << bad.message();
  EXPECT_FALSE(w.addRawTensor("odd.weight", {48, 1}, GgmlType::Q8_0,
                              std::vector<uint8_t>(34))
                   .ok());

  std::vector<uint8_t> image = w.image();
  auto file = GgufFile::parse(image.data(), image.size(), "the image");
  ASSERT_TRUE(file.ok()) << file.status().message();
  const GgufTensor *q = (*file)->tensor("q.weight");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->type, GgmlType::Q8_0);
  EXPECT_EQ(q->dims, (std::vector<int64_t>{64, 2}));
  ASSERT_EQ(q->bytes, q8.size());
  EXPECT_EQ(std::memcmp(q->data, q8.data(), q8.size()), 0);
  const GgufTensor *fw = (*file)->tensor("f.weight");
  ASSERT_TRUE(fw);
  EXPECT_EQ(fw->offset % 32, 0u);
  EXPECT_EQ(std::memcmp(fw->data, f.data(), 8), 0);
  EXPECT_EQ((*file)->tensor("bad.weight"), nullptr);
}

} // namespace
