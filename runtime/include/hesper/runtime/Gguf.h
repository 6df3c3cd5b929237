//===- Gguf.h - GGUF model files --------------------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A reader for GGUF, the model file format of llama.cpp (versions 2 and 3).
// The file is mapped read-only; tensors are views into the mapping, never
// copies. Every length, count and offset read from the file is checked
// against the file's size before it is used, so a malformed file gets one
// line saying what is wrong -- never a crash, an out-of-bounds read or a huge
// allocation.
//
//   auto file = rt::GgufFile::open("model.gguf");
//   if (!file) { print(file.status().message()); return 1; }
//   const rt::GgufValue *arch = file->find("general.architecture");
//   const rt::GgufTensor *t = file->tensor("token_embd.weight");
//   std::vector<float> row(t->dims[0]);
//   rt::dequantizeRow(t->type, t->data, row.data(), t->dims[0]);
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_GGUF_H
#define HESPER_RUNTIME_GGUF_H

#include "hesper/base/Half.h"
#include "hesper/runtime/Runtime.h"

#include <map>
#include <optional>

namespace hesper::rt {

/// Metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char *ggufTypeName(GgufType t);

/// One metadata value. Scalars are widened into `i`/`u`/`f`; strings are
/// copied (they are small); arrays hold their elements, which may themselves
/// be arrays.
struct GgufValue {
  GgufType type = GgufType::U8;
  int64_t i = 0;          ///< signed integers and bools
  uint64_t u = 0;         ///< unsigned integers (also set for non-negative i)
  double f = 0;           ///< floats
  std::string str;        ///< String
  GgufType elementType = GgufType::U8; ///< Array: the element type
  std::vector<GgufValue> array;        ///< Array: the elements

  bool isInteger() const;
  bool isFloat() const { return type == GgufType::F32 || type == GgufType::F64; }
  /// The value as a number (integers and bools converted); nullopt for
  /// strings and arrays.
  std::optional<double> asNumber() const;
};

/// Tensor element types, numbered as ggml numbers them. Only the ones the
/// reader understands are listed; any other number is an error.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  /// 32 values in 20 bytes: f16 d, f16 m, then q4_0's nibbles; a value is
  /// d * q + m.
  Q4_1 = 3,
  /// 32 values in 22 bytes: f16 d, a u32 of fifth bits (bit j for value
  /// j), then q4_0's nibbles; a value is d * ((q | fifth << 4) - 16).
  Q5_0 = 6,
  /// 32 values in 24 bytes: f16 d, f16 m, the u32 of fifth bits, the
  /// nibbles; a value is d * (q | fifth << 4) + m.
  Q5_1 = 7,
  Q8_0 = 8,
  /// 2-bit k-quant: 256 values in 84 bytes (4-bit scales and mins of
  /// sixteen 16-value sub-blocks, 2-bit codes, f16 d and dmin).
  Q2_K = 10,
  /// 3-bit k-quant: 256 values in 110 bytes (a bit plane, 2-bit codes,
  /// sixteen 6-bit sub-block scales, f16 d).
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  /// 4-bit non-linear: blocks of 32 values in 18 bytes (an f16 scale, then
  /// q4_0's nibble layout; a value is the scale times entry `nibble` of a
  /// fixed 16-entry table of signed bytes, rt::kIq4nlValues).
  IQ4_NL = 20,
  /// IQ4_NL's values in super-blocks of 256 (136 bytes: f16 d, the high
  /// two bits of eight 6-bit sub-block scales in a u16, their low four
  /// bits in 4 bytes, 128 bytes of nibbles); a value is d * (scale - 32)
  /// times its table entry.
  IQ4_XS = 23,
  BF16 = 30,
  TQ1_0 = 34, ///< ternary, 256 values in 54 bytes (base-3 digits)
  TQ2_0 = 35, ///< ternary, 256 values in 66 bytes (2 bits each)
  /// BitNet's I2_S (Microsoft's ggml fork): ternary codes, 2 bits each in
  /// blocks of 128 values / 32 bytes, then one f32 scale for the whole
  /// tensor and 28 bytes of padding (a tensor is n/4 + 32 bytes).
  I2_S = 36,
};
const char *ggmlTypeName(GgmlType t);
/// IQ4_NL's values per nibble, as ggml defines them (the compiler's copy is
/// circuit::IQ4_NLType::kValues; unittests/Interpreter/QuantTest checks
/// that both decode every block alike).
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35,
                                            -22,  -10,  1,   13,  25,  38,
                                            53,   69,   89,  113};
/// Elements per block (1 for F32/F16/BF16, 32 for Q4_0/Q8_0, 256 for the
/// k-quants) and bytes per block.
int64_t ggmlBlockSize(GgmlType t);
int64_t ggmlBlockBytes(GgmlType t);
/// Bytes of a row of `n` elements; nullopt when n is not a whole number of
/// blocks.
std::optional<int64_t> ggmlRowBytes(GgmlType t, int64_t n);
/// Bytes after the blocks of a whole tensor: 32 for I2_S (its scale and
/// padding), 0 for the others.
int64_t ggmlTensorTrailerBytes(GgmlType t);
/// Bytes of a whole tensor of ggml dims `dims` (the row length first): its
/// rows and its trailer; nullopt when a row is not a whole number of blocks
/// or the size overflows.
std::optional<int64_t> ggmlTensorBytes(GgmlType t,
                                       const std::vector<int64_t> &dims);

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  /// ggml order: dims[0] is the fastest-varying (the row length).
  std::vector<int64_t> dims;
  int64_t numElements = 0;
  uint64_t offset = 0;   ///< from the start of the data section
  uint64_t bytes = 0;    ///< size of the data
  const uint8_t *data = nullptr; ///< into the mapping
};

class GgufFile {
public:
  /// Maps and parses `path`. Errors name the file and the problem:
  /// "model.gguf: truncated in the key of metadata entry 3".
  static Result<std::unique_ptr<GgufFile>> open(const std::string &path);
  /// Parses an in-memory image (not copied: it must outlive the result);
  /// `what` names it in errors.
  static Result<std::unique_ptr<GgufFile>>
  parse(const uint8_t *bytes, size_t size, const std::string &what);
  ~GgufFile();
  GgufFile(const GgufFile &) = delete;
  GgufFile &operator=(const GgufFile &) = delete;

  uint32_t version() const { return ver; }
  uint64_t alignment() const { return align; }
  const std::string &path() const { return name; }

  /// Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>> &metadata() const {
    return meta;
  }
  const GgufValue *find(const std::string &key) const;
  /// Typed lookups: nullopt when the key is absent or of another kind.
  std::optional<std::string> getString(const std::string &key) const;
  std::optional<int64_t> getInt(const std::string &key) const;
  std::optional<double> getFloat(const std::string &key) const; ///< ints too
  std::optional<bool> getBool(const std::string &key) const;

  const std::vector<GgufTensor> &tensors() const { return tens; }
  /// A tensor of the file's table, or a view added by addView.
  const GgufTensor *tensor(const std::string &name) const;
  /// Adds a tensor that is not in the file's table but names bytes of it
  /// (a loader's view: per-expert tensors stored one after another seen as
  /// one). tensor() finds it; tensors() lists the file's own only.
  void addView(GgufTensor view) {
    std::string key = view.name;
    views[key] = std::move(view);
  }

private:
  GgufFile() = default;
  std::string name;
  uint32_t ver = 0;
  uint64_t align = 32;
  std::vector<std::pair<std::string, GgufValue>> meta;
  std::map<std::string, size_t> metaIndex;
  std::vector<GgufTensor> tens;
  std::map<std::string, size_t> tensorIndex;
  std::map<std::string, GgufTensor> views;
  void *mapping = nullptr;
  size_t mappingBytes = 0;
};

/// Converts `n` elements (a whole number of blocks) of type `t` at `src`
/// into f32, bit for bit as ggml's reference dequantization does.
Status dequantizeRow(GgmlType t, const uint8_t *src, float *dst, int64_t n);
/// The per-tensor scale of an I2_S tensor (the f32 after its blocks); its
/// rows dequantize (dequantizeRow) to the unscaled values -1, 0, 1.
float i2sScale(const GgufTensor &t);

/// Writes a GGUF v3 file: metadata in the order added, then f32 tensors,
/// each aligned to 32 bytes (general.alignment's default). What the
/// trainer saves; GgufFile reads it back.
class GgufWriter {
public:
  void addString(const std::string &key, const std::string &value);
  void addU32(const std::string &key, uint32_t value);
  void addI32(const std::string &key, int32_t value);
  void addU64(const std::string &key, uint64_t value);
  void addF32(const std::string &key, float value);
  void addBool(const std::string &key, bool value);
  void addStringArray(const std::string &key,
                      const std::vector<std::string> &values);
  void addI32Array(const std::string &key, const std::vector<int32_t> &values);
  void addF32Array(const std::string &key, const std::vector<float> &values);
  /// An f32 tensor; `dims` in ggml order (dims[0] is the row length). The
  /// data is copied.
  void addTensor(const std::string &name, const std::vector<int64_t> &dims,
                 const float *data);
  /// A tensor of any type as its stored bytes (ggmlRowBytes of each row);
  /// an error when their count does not match the type and dims.
  Status addRawTensor(const std::string &name,
                      const std::vector<int64_t> &dims, GgmlType type,
                      std::vector<uint8_t> bytes);
  /// The file's bytes (what GgufFile::parse reads).
  std::vector<uint8_t> image() const;
  /// Writes the file (to a temporary name, then renamed over `path`, so a
  /// crash never leaves a half-written file behind).
  Status write(const std::string &path) const;

private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
    GgmlType type;
    std::vector<uint8_t> bytes;
  };
  std::string meta; ///< the encoded key/value pairs
  uint64_t numMeta = 0;
  std::vector<Tensor> tensors;
};

/// IEEE half and bfloat16 to f32, as the reader decodes them (a half NaN is
/// made quiet, as F16C does); the conversions are hesper/base/Half.h's.
inline float halfToFloat(uint16_t h) { return halfBitsToFloatQuietNaN(h); }
inline float bf16ToFloat(uint16_t b) { return bfloat16BitsToFloat(b); }

} // namespace hesper::rt

#endif // HESPER_RUNTIME_GGUF_H
