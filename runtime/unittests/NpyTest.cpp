//===- NpyTest.cpp - Tests of the .npy reader and writer ------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Round trips of every dtype, the exact bytes numpy.save writes, headers as
// other writers format them, and one test per error. The expected files are
// spelled out here, so the tests need no Python or NumPy.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Npy.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace hesper::rt;

namespace {

std::vector<uint8_t> bytesOf(const std::string &s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

/// A .npy image with the header text `dict` (a newline is appended) and the
/// given data; major version 1 uses a 2-byte header length, 2 and 3 four.
std::vector<uint8_t> npyImage(const std::string &dict,
                              const std::vector<uint8_t> &data,
                              unsigned major = 1) {
  std::string header = dict + "\n";
  std::string out = std::string("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  size_t lenBytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < lenBytes; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  std::vector<uint8_t> image = bytesOf(out);
  image.insert(image.end(), data.begin(), data.end());
  return image;
}

Result<NpyArray> parse(const std::vector<uint8_t> &image) {
  return parseNpy(image.data(), image.size(), "x.npy");
}

/// Expects `image` to fail with a message that starts with "x.npy: " and
/// contains `needle`.
void expectError(const std::vector<uint8_t> &image, const std::string &needle) {
  Result<NpyArray> r = parse(image);
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << needle;
  const std::string &msg = r.status().message();
  EXPECT_EQ(msg.rfind("x.npy: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

std::vector<uint8_t> floats(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/hesper-npy-" + std::to_string(getpid()) +
         "-" + name;
}

NpyArray makeArray(DType t, std::vector<int64_t> shape) {
  NpyArray a;
  a.dtype = t;
  a.shape = std::move(shape);
  a.data.resize(static_cast<size_t>(a.numElements()) * dtypeBytes(t));
  for (size_t i = 0; i < a.data.size(); ++i)
    a.data[i] = static_cast<uint8_t>(i * 37 + 11);
  return a;
}

} // namespace

TEST(NpyTest, DTypeNamesAndSizes) {
  EXPECT_STREQ(dtypeName(DType::F32), "f32");
  EXPECT_STREQ(dtypeName(DType::F16), "f16");
  EXPECT_STREQ(dtypeName(DType::I32), "i32");
  EXPECT_STREQ(dtypeName(DType::U8), "u8");
  EXPECT_EQ(dtypeBytes(DType::F32), 4u);
  EXPECT_EQ(dtypeBytes(DType::F16), 2u);
  EXPECT_EQ(dtypeBytes(DType::I32), 4u);
  EXPECT_EQ(dtypeBytes(DType::U8), 1u);
}

TEST(NpyTest, NumElements) {
  NpyArray a;
  EXPECT_EQ(a.numElements(), 1); // a 0-d array holds one element
  a.shape = {3, 4};
  EXPECT_EQ(a.numElements(), 12);
  a.shape = {3, 0};
  EXPECT_EQ(a.numElements(), 0);
}

TEST(NpyTest, RoundTripEveryDTypeAndShape) {
  const std::vector<std::pair<DType, std::vector<int64_t>>> cases = {
      {DType::F32, {2, 3}},   {DType::F32, {}},  {DType::F16, {5}},
      {DType::F16, {2, 2}},   {DType::I32, {4}}, {DType::I32, {}},
      {DType::U8, {3, 1, 2}}, {DType::U8, {7}},  {DType::F32, {0, 3}},
      {DType::I32, {12345}},
  };
  for (const auto &[dtype, shape] : cases) {
    NpyArray a = makeArray(dtype, shape);
    std::vector<uint8_t> image = serializeNpy(a);
    Result<NpyArray> r = parseNpy(image.data(), image.size(), "mem");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->dtype, a.dtype);
    EXPECT_EQ(r->shape, a.shape);
    EXPECT_EQ(r->data, a.data);
    // numpy.save aligns the data to 64 bytes; so do we.
    EXPECT_EQ((image.size() - a.data.size()) % 64, 0u) << dtypeName(dtype);
    EXPECT_EQ(image[image.size() - a.data.size() - 1], '\n');
  }
}

TEST(NpyTest, RoundTripThroughAFile) {
  NpyArray a = makeArray(DType::F16, {3, 4});
  std::string path = tempPath("roundtrip.npy");
  ASSERT_TRUE(writeNpy(path, a).ok());
  Result<NpyArray> r = readNpy(path);
  std::remove(path.c_str());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, DType::F16);
  EXPECT_EQ(r->shape, a.shape);
  EXPECT_EQ(r->data, a.data);
}

// The bytes of numpy.save('x.npy', np.array([1, 2, 3], dtype=np.float32)):
// the dict with sorted keys, spaces, a newline at byte 127, then the data.
TEST(NpyTest, SerializeMatchesNumpyBytes) {
  NpyArray a;
  a.dtype = DType::F32;
  a.shape = {3};
  a.data = floats({1.0f, 2.0f, 3.0f});
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                         "{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (3,), }" +
                         std::string(60, ' ') + "\n" +
                         std::string("\x00\x00\x80\x3f"
                                     "\x00\x00\x00\x40"
                                     "\x00\x00\x40\x40",
                                     12);
  ASSERT_EQ(expected.size(), 140u);
  EXPECT_EQ(serializeNpy(a), bytesOf(expected));
}

TEST(NpyTest, SerializeHeaders) {
  // A 0-d u8 array: the dict, padding, a newline; the data at byte 128.
  NpyArray scalar = makeArray(DType::U8, {});
  std::vector<uint8_t> image = serializeNpy(scalar);
  std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (), }";
  ASSERT_EQ(image.size(), 129u);
  EXPECT_EQ(std::string(image.begin() + 10, image.begin() + 10 + dict.size()),
            dict);
  EXPECT_EQ(std::string(image.begin() + 10 + dict.size(), image.begin() + 127),
            std::string(127 - 10 - dict.size(), ' '));
  EXPECT_EQ(image[127], '\n');

  // A 2-D i32 array; the header length field counts the padding.
  NpyArray matrix = makeArray(DType::I32, {2, 3});
  image = serializeNpy(matrix);
  dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(std::string(image.begin() + 10, image.begin() + 10 + dict.size()),
            dict);
  EXPECT_EQ(image[6], 1); // version 1.0
  EXPECT_EQ(image[7], 0);
  EXPECT_EQ(image[8] | image[9] << 8, 118);
  EXPECT_EQ(image.size(), 128u + 24u);
}

TEST(NpyTest, ParsesHeadersOfOtherWriters) {
  // Any key order, any spacing, double quotes, no trailing comma.
  Result<NpyArray> r = parse(
      npyImage("{ \"shape\":(2,2) ,'descr':'<i4',  'fortran_order' : False}",
               std::vector<uint8_t>(16, 1)));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, DType::I32);
  EXPECT_EQ(r->shape, (std::vector<int64_t>{2, 2}));

  // Python 2 long integers.
  r = parse(
      npyImage("{'descr': '|u1', 'fortran_order': False, 'shape': (5L,), }",
               std::vector<uint8_t>(5, 2)));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->shape, (std::vector<int64_t>{5}));

  // '<u1' is accepted as well as '|u1'; '<f2' is f16.
  r = parse(
      npyImage("{'descr': '<u1', 'fortran_order': False, 'shape': ()}", {42}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, DType::U8);
  EXPECT_TRUE(r->shape.empty());
  EXPECT_EQ(r->data, std::vector<uint8_t>{42});
  r = parse(npyImage("{'descr': '<f2', 'fortran_order': False, 'shape': (1,)}",
                     {0, 0x3c}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, DType::F16);
}

TEST(NpyTest, ParsesVersions2And3) {
  for (unsigned major : {2u, 3u}) {
    Result<NpyArray> r = parse(
        npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                 floats({1.5f, -2.0f}), major));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->shape, (std::vector<int64_t>{2}));
    EXPECT_EQ(r->data, floats({1.5f, -2.0f}));
  }
}

TEST(NpyTest, ErrorBadMagic) {
  expectError(bytesOf("PK\x03\x04 not numpy at all"),
              "not a .npy file (bad magic)");
  expectError(bytesOf("\x93NU"), "not a .npy file (bad magic)");
  expectError({}, "not a .npy file (bad magic)");
}

TEST(NpyTest, ErrorUnsupportedVersion) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': ()}";
  expectError(npyImage(dict, floats({1}), 4),
              "unsupported .npy version 4.0 (need 1.0, 2.0 or 3.0)");
  std::vector<uint8_t> image = npyImage(dict, floats({1}));
  image[7] = 1;
  expectError(image, "unsupported .npy version 1.1");
}

TEST(NpyTest, ErrorMalformedHeader) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
       "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': ()}",
       "duplicate key 'descr'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': ()}",
       "malformed header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)",
       "malformed header"},
      {"['descr', '<f4']", "malformed header: expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ()} extra",
       "unexpected text after the dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}",
       "shape is 1, not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ('a',)}",
       "shape has 'a', not an integer"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': ()}",
       "fortran_order is 0, not True or False"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': ()}",
       "expected a Python literal"},
      {"{'descr': '<f4', 'fortran_order': False, "
       "'shape': (99999999999999999999,)}",
       "integer too large"},
  };
  for (const auto &[dict, needle] : cases) {
    SCOPED_TRACE(dict);
    expectError(npyImage(dict, floats({1})), needle);
  }

  // A header length that runs past the end of the file.
  std::vector<uint8_t> image =
      npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", {});
  image[8] = 0xff;
  expectError(image, "malformed header: it is 255 bytes long");
  expectError(bytesOf(std::string("\x93NUMPY\x01\x00\x05", 9)),
              "malformed header");
}

TEST(NpyTest, ErrorUnsupportedDType) {
  const char *need = " is not supported (need <f4, <f2, <i4 or |u1)";
  for (const char *descr : {">f4", "|i1", "<f8", "<i8", "<u4", "|b1"})
    expectError(npyImage(std::string("{'descr': '") + descr +
                             "', 'fortran_order': False, 'shape': (1,), }",
                         floats({1})),
                std::string("dtype '") + descr + "'" + need);
  expectError(npyImage("{'descr': [('a', '<f4')], 'fortran_order': False, "
                       "'shape': (1,), }",
                       floats({1})),
              "dtype a list (a structured dtype) is not supported");
}

TEST(NpyTest, ErrorFortranOrder) {
  expectError(npyImage("{'descr': '<f4', 'fortran_order': True, "
                       "'shape': (2, 2), }",
                       floats({1, 2, 3, 4})),
              "fortran_order True is not supported");
}

TEST(NpyTest, ErrorTruncatedData) {
  expectError(npyImage("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (3, 4), }",
                       std::vector<uint8_t>(20)),
              "expected 48 bytes of data, found 20");
}

TEST(NpyTest, ErrorTrailingData) {
  expectError(npyImage("{'descr': '<i4', 'fortran_order': False, "
                       "'shape': (2,), }",
                       std::vector<uint8_t>(12)),
              "file has 4 bytes after the data");
}

TEST(NpyTest, ErrorNegativeDimension) {
  expectError(npyImage("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2, -3), }",
                       {}),
              "negative dimension -3 in shape");
}

TEST(NpyTest, ErrorHugeShape) {
  expectError(npyImage("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (4611686018427387904, 8), }",
                       {}),
              "is too large");
}

TEST(NpyTest, ErrorMissingFile) {
  std::string path = tempPath("does-not-exist.npy");
  Result<NpyArray> r = readNpy(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            path + ": cannot open: " + std::strerror(ENOENT));
}

TEST(NpyTest, ReadErrorsNameTheFile) {
  std::string path = tempPath("bad.npy");
  std::FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("hello", f);
  std::fclose(f);
  Result<NpyArray> r = readNpy(path);
  std::remove(path.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ": not a .npy file (bad magic)");
}

TEST(NpyTest, WriteErrors) {
  NpyArray a = makeArray(DType::F32, {2});
  a.data.pop_back();
  Status st = writeNpy(tempPath("short.npy"), a);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("needs 8 bytes of data, the array has 7"),
            std::string::npos)
      << st.message();

  std::string path = tempPath("no-such-dir") + "/x.npy";
  st = writeNpy(path, makeArray(DType::U8, {1}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind(path + ": cannot open for writing: ", 0), 0u)
      << st.message();
}
