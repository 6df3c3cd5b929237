//===- GgufWriter.cpp - Write GGUF v3 files -------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Gguf.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

using namespace hesper::rt;

namespace {
constexpr uint64_t kAlignment = 32;

void putRaw(std::string &out, const void *data, size_t bytes) {
  out.append(static_cast<const char *>(data), bytes);
}
template <typename T> void put(std::string &out, T value) {
  putRaw(out, &value, sizeof(T));
}
void putString(std::string &out, const std::string &s) {
  put<uint64_t>(out, s.size());
  out += s;
}
void putKey(std::string &out, const std::string &key, GgufType type) {
  putString(out, key);
  put<uint32_t>(out, static_cast<uint32_t>(type));
}
} // namespace

void GgufWriter::addString(const std::string &key, const std::string &value) {
  putKey(meta, key, GgufType::String);
  putString(meta, value);
  ++numMeta;
}

void GgufWriter::addU32(const std::string &key, uint32_t value) {
  putKey(meta, key, GgufType::U32);
  put(meta, value);
  ++numMeta;
}

void GgufWriter::addI32(const std::string &key, int32_t value) {
  putKey(meta, key, GgufType::I32);
  put(meta, value);
  ++numMeta;
}

void GgufWriter::addU64(const std::string &key, uint64_t value) {
  putKey(meta, key, GgufType::U64);
  put(meta, value);
  ++numMeta;
}

void GgufWriter::addF32(const std::string &key, float value) {
  putKey(meta, key, GgufType::F32);
  put(meta, value);
  ++numMeta;
}

void GgufWriter::addBool(const std::string &key, bool value) {
  putKey(meta, key, GgufType::Bool);
  put<uint8_t>(meta, value ? 1 : 0);
  ++numMeta;
}

void GgufWriter::addStringArray(const std::string &key,
                                const std::vector<std::string> &values) {
  putKey(meta, key, GgufType::Array);
  put<uint32_t>(meta, static_cast<uint32_t>(GgufType::String));
  put<uint64_t>(meta, values.size());
  for (const std::string &v : values)
    putString(meta, v);
  ++numMeta;
}

void GgufWriter::addI32Array(const std::string &key,
                             const std::vector<int32_t> &values) {
  putKey(meta, key, GgufType::Array);
  put<uint32_t>(meta, static_cast<uint32_t>(GgufType::I32));
  put<uint64_t>(meta, values.size());
  putRaw(meta, values.data(), values.size() * sizeof(int32_t));
  ++numMeta;
}

void GgufWriter::addF32Array(const std::string &key,
                             const std::vector<float> &values) {
  putKey(meta, key, GgufType::Array);
  put<uint32_t>(meta, static_cast<uint32_t>(GgufType::F32));
  put<uint64_t>(meta, values.size());
  putRaw(meta, values.data(), values.size() * sizeof(float));
  ++numMeta;
}

void GgufWriter::addTensor(const std::string &name,
                           const std::vector<int64_t> &dims,
                           const float *data) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  const uint8_t *raw = reinterpret_cast<const uint8_t *>(data);
  tensors.push_back({name, dims, GgmlType::F32,
                     std::vector<uint8_t>(raw, raw + n * sizeof(float))});
}

Status GgufWriter::addRawTensor(const std::string &name,
                                const std::vector<int64_t> &dims, GgmlType type,
                                std::vector<uint8_t> bytes) {
  if (dims.empty())
    return Status::error("tensor '" + name + "' has no dims");
  std::optional<int64_t> want = ggmlTensorBytes(type, dims);
  if (!want || static_cast<uint64_t>(*want) != bytes.size())
    return Status::error(
        "tensor '" + name + "': " + std::to_string(bytes.size()) +
        " bytes do not hold its " + ggmlTypeName(type) + " rows");
  tensors.push_back({name, dims, type, std::move(bytes)});
  return {};
}

std::vector<uint8_t> GgufWriter::image() const {
  std::string header;
  putRaw(header, "GGUF", 4);
  put<uint32_t>(header, 3);
  put<uint64_t>(header, tensors.size());
  put<uint64_t>(header, numMeta);
  header += meta;
  uint64_t offset = 0;
  for (const Tensor &t : tensors) {
    putString(header, t.name);
    put<uint32_t>(header, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims)
      put<uint64_t>(header, static_cast<uint64_t>(d));
    put<uint32_t>(header, static_cast<uint32_t>(t.type));
    put<uint64_t>(header, offset);
    offset += (t.bytes.size() + kAlignment - 1) / kAlignment * kAlignment;
  }
  header.resize((header.size() + kAlignment - 1) / kAlignment * kAlignment,
                '\0');
  std::vector<uint8_t> out(header.begin(), header.end());
  for (const Tensor &t : tensors) {
    out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    out.resize((out.size() + kAlignment - 1) / kAlignment * kAlignment, 0);
  }
  return out;
}

Status GgufWriter::write(const std::string &path) const {
  std::vector<uint8_t> bytes = image();
  std::string temporary = path + ".tmp";
  FILE *f = std::fopen(temporary.c_str(), "wb");
  if (!f)
    return Status::error(path + ": cannot write: " + std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return Status::error(path + ": cannot write: " + std::strerror(errno));
  }
  return {};
}
