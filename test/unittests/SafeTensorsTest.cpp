//===- SafeTensorsTest.cpp - the runtime's safetensors reader/writer ------===//

#include "tgc/Runtime/SafeTensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

using namespace tgc::rt;

namespace {

std::vector<uint8_t> fileWithHeader(const std::string &header, size_t dataBytes,
                                    uint64_t declaredLength = UINT64_MAX) {
  std::vector<uint8_t> out(8);
  uint64_t n = declaredLength == UINT64_MAX ? header.size() : declaredLength;
  std::memcpy(out.data(), &n, 8);
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + dataBytes, 0);
  return out;
}

std::string parseError(const std::vector<uint8_t> &bytes) {
  SafeTensorsFile file;
  std::string error;
  EXPECT_FALSE(parseSafeTensors("w.safetensors", bytes, file, error));
  return error;
}

TEST(SafeTensors, RoundTrip) {
  SafeTensorsFile file;
  file.tensors["a.weight"] = makeTensor({2, 3}, {1, 2, 3, 4, 5, 6}, DType::F32);
  file.tensors["ids"] = makeTensor({3}, {7, 8, 9}, DType::I32);
  file.metadata["format"] = "pt";
  std::string path = ::testing::TempDir() + "/roundtrip.safetensors", error;
  ASSERT_TRUE(writeSafeTensors(path, file, error)) << error;
  SafeTensorsFile back;
  ASSERT_TRUE(readSafeTensors(path, back, error)) << error;
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors["a.weight"].shape, std::vector<int64_t>({2, 3}));
  EXPECT_EQ(back.tensors["a.weight"].get(5), 6.0);
  EXPECT_EQ(back.tensors["ids"].dtype, DType::I32);
  EXPECT_EQ(back.tensors["ids"].get(2), 9.0);
  EXPECT_EQ(back.metadata["format"], "pt");
  std::remove(path.c_str());
}

TEST(SafeTensors, HalfAndBFloat) {
  SafeTensorsFile file;
  std::string header =
      R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[4,6]}})";
  auto bytes = fileWithHeader(header, 6);
  uint16_t values[3] = {0x3C00, 0xC000, 0x3F80}; // 1.0, -2.0 (f16); 1.0 (bf16)
  std::memcpy(bytes.data() + 8 + header.size(), values, 6);
  std::string error;
  ASSERT_TRUE(parseSafeTensors("x", bytes, file, error)) << error;
  EXPECT_EQ(file.tensors["h"].get(0), 1.0);
  EXPECT_EQ(file.tensors["h"].get(1), -2.0);
  EXPECT_EQ(file.tensors["b"].get(0), 1.0);
}

TEST(SafeTensors, Truncated) {
  EXPECT_NE(parseError({1, 2, 3}).find("shorter than its 8-byte header length"),
            std::string::npos);
  auto bytes = fileWithHeader(
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  EXPECT_NE(parseError(bytes).find("lie outside the 8-byte data section"),
            std::string::npos);
}

TEST(SafeTensors, HeaderLengthLies) {
  auto bytes = fileWithHeader("{}", 0, 1000);
  EXPECT_NE(parseError(bytes).find("header length 1000 exceeds the file size"),
            std::string::npos);
}

TEST(SafeTensors, SizeMismatch) {
  auto bytes = fileWithHeader(
      R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8);
  EXPECT_NE(parseError(bytes).find("cover 8 bytes but shape and dtype need 12"),
            std::string::npos);
}

TEST(SafeTensors, UnknownDType) {
  auto bytes = fileWithHeader(
      R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", 1);
  EXPECT_NE(parseError(bytes).find("tensor 'a': unsupported dtype 'Q4'"),
            std::string::npos);
}

TEST(SafeTensors, Overlap) {
  auto bytes = fileWithHeader(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
      12);
  EXPECT_NE(parseError(bytes).find("overlap"), std::string::npos);
}

TEST(SafeTensors, BadJson) {
  EXPECT_NE(parseError(fileWithHeader(R"({"a": [1, 2)", 0))
                .find("invalid header JSON"),
            std::string::npos);
  EXPECT_NE(parseError(fileWithHeader(R"([1])", 0))
                .find("header must be a JSON object"),
            std::string::npos);
  EXPECT_NE(
      parseError(
          fileWithHeader(
              R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0))
          .find("shape entries must be non-negative integers"),
      std::string::npos);
}

TEST(SafeTensors, DeepNesting) {
  // The header parser is recursive: deep nesting is refused, not a stack
  // overflow.
  std::string deep =
      "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(parseError(fileWithHeader(deep, 0)).find("nesting deeper than 16 levels"),
            std::string::npos);
}

TEST(SafeTensors, MissingFile) {
  SafeTensorsFile file;
  std::string error;
  EXPECT_FALSE(readSafeTensors("/nonexistent/w.safetensors", file, error));
  EXPECT_NE(error.find("/nonexistent/w.safetensors: cannot open"),
            std::string::npos);
}

} // namespace

namespace {
std::vector<uint16_t> narrowed(const std::vector<float> &values, DType dtype) {
  TensorData t = narrowFloats(values.data(), values.size(),
                              {static_cast<int64_t>(values.size())}, dtype);
  std::vector<uint16_t> bits(values.size());
  std::memcpy(bits.data(), t.bytes.data(), t.bytes.size());
  return bits;
}
} // namespace

// Rounding to nearest even, the edges included: halfway cases, overflow to
// infinity, subnormal halves, NaN.
TEST(SafeTensors, NarrowToHalf) {
  const float inf = INFINITY;
  std::vector<float> values{1.0f,
                            -0.0f,
                            65504.0f,
                            65520.0f,
                            1e6f,
                            5.9604645e-8f /* 2^-24 */,
                            2.9802322e-8f /* 2^-25: tie to 0 */,
                            1.0f / 3,
                            inf,
                            NAN};
  std::vector<uint16_t> expected{0x3c00, 0x8000, 0x7bff, 0x7c00, 0x7c00,
                                 0x0001, 0x0000, 0x3555, 0x7c00};
  std::vector<uint16_t> bits = narrowed(values, DType::F16);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(bits[i], expected[i]) << "value " << values[i];
  EXPECT_EQ(bits.back() & 0x7c00, 0x7c00); // NaN stays NaN
  EXPECT_NE(bits.back() & 0x03ff, 0);
}

TEST(SafeTensors, NarrowToBFloat) {
  std::vector<float> values{1.0f, 1.0f / 3, -2.5f, 3.4028235e38f /* FLT_MAX */,
                            NAN};
  std::vector<uint16_t> bits = narrowed(values, DType::BF16);
  EXPECT_EQ(bits[0], 0x3f80);
  EXPECT_EQ(bits[1], 0x3eab); // 0x3eaaaaab rounds up
  EXPECT_EQ(bits[2], 0xc020);
  EXPECT_EQ(bits[3], 0x7f80); // rounds past the largest bf16: infinity
  EXPECT_EQ(bits[4] & 0x7f80, 0x7f80);
  EXPECT_NE(bits[4] & 0x007f, 0);
}
