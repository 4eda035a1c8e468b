//===- MemRefCopyTest.cpp - the runtime's memrefCopy ----------------------===//
//
// memrefCopy merges dimensions contiguous in both views and copies runs of
// whole rows with one memcpy; against an element-by-element copy of the
// same views: row chunks (a mixture-of-experts layer's padded chunks),
// transposed and partial views, unit and empty dimensions, rank 0, 2-byte
// elements.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

} // namespace

extern "C" void memrefCopy(int64_t elementSize, UnrankedMemRef *src,
                           UnrankedMemRef *dst);

namespace {

/// A strided view of `storage`: {allocated, aligned, offset, sizes,
/// strides}, as MLIR's ranked descriptors.
struct StridedView {
  std::vector<int64_t> words;
  UnrankedMemRef unranked;
  StridedView(std::vector<uint8_t> &storage, int64_t offset,
              std::vector<int64_t> sizes, std::vector<int64_t> strides) {
    auto base = reinterpret_cast<int64_t>(storage.data());
    words = {base, base, offset};
    words.insert(words.end(), sizes.begin(), sizes.end());
    words.insert(words.end(), strides.begin(), strides.end());
    unranked = {static_cast<int64_t>(sizes.size()), words.data()};
  }
};

/// The element-by-element copy of the same views.
void referenceCopy(int64_t elementSize, const std::vector<uint8_t> &src,
                   int64_t srcOffset, const std::vector<int64_t> &srcStrides,
                   std::vector<uint8_t> &dst, int64_t dstOffset,
                   const std::vector<int64_t> &dstStrides,
                   const std::vector<int64_t> &sizes) {
  int64_t total = 1;
  for (int64_t s : sizes)
    total *= s;
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t so = srcOffset, dof = dstOffset;
    for (size_t i = 0; i < sizes.size(); ++i) {
      so += index[i] * srcStrides[i];
      dof += index[i] * dstStrides[i];
    }
    std::memcpy(&dst[dof * elementSize], &src[so * elementSize], elementSize);
    for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
      if (++index[i] < sizes[i])
        break;
      index[i] = 0;
    }
  }
}

struct Case {
  int64_t elementSize;
  int64_t srcOffset;
  std::vector<int64_t> srcStrides;
  int64_t dstOffset;
  std::vector<int64_t> dstStrides;
  std::vector<int64_t> sizes;
};

void expectSameAsReference(const Case &c, size_t bytes = 1 << 16) {
  std::vector<uint8_t> src(bytes);
  for (size_t i = 0; i < bytes; ++i)
    src[i] = static_cast<uint8_t>(i * 131 + 7);
  std::vector<uint8_t> dst(bytes, 0xAB), expected(bytes, 0xAB);
  referenceCopy(c.elementSize, src, c.srcOffset, c.srcStrides, expected,
                c.dstOffset, c.dstStrides, c.sizes);
  StridedView s(src, c.srcOffset, c.sizes, c.srcStrides);
  StridedView d(dst, c.dstOffset, c.sizes, c.dstStrides);
  memrefCopy(c.elementSize, &s.unranked, &d.unranked);
  EXPECT_EQ(dst, expected);
}

TEST(MemRefCopy, RowChunkIntoPaddedBuffer) {
  // Rows [17, 17 + 45) of a [600, 24] f32 buffer into a [64, 24] one.
  expectSameAsReference({4, 17 * 24, {24, 1}, 0, {24, 1}, {45, 24}});
}

TEST(MemRefCopy, PartialRowsAndColumns) {
  // A [5, 3] block of a [9, 7] buffer into the middle of a [6, 11] one.
  expectSameAsReference({4, 2 * 7 + 1, {7, 1}, 11 + 4, {11, 1}, {5, 3}});
}

TEST(MemRefCopy, Transposed) {
  expectSameAsReference({4, 3, {1, 13}, 0, {9, 1}, {13, 9}});
}

TEST(MemRefCopy, ThreeDimensionsWithUnitDimensions) {
  expectSameAsReference(
      {4, 5, {40, 40, 8, 1}, 1, {64, 64, 8, 1}, {3, 1, 5, 8}});
  expectSameAsReference({2, 0, {1, 6, 1}, 7, {1, 6, 1}, {1, 4, 6}});
}

TEST(MemRefCopy, EmptyAndScalar) {
  expectSameAsReference({4, 0, {24, 1}, 0, {24, 1}, {0, 24}});
  expectSameAsReference({4, 9, {}, 3, {}, {}});
}

TEST(MemRefCopy, RandomViews) {
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 300; ++trial) {
    int64_t rank = pick(1, 4);
    std::vector<int64_t> sizes(rank), srcStrides(rank), dstStrides(rank);
    for (int64_t &s : sizes)
      s = pick(1, 6);
    // Row-major strides of a buffer at least as large, then maybe
    // permuted (a transpose) on one side.
    auto strides = [&](std::vector<int64_t> &out) {
      int64_t stride = 1;
      for (int64_t i = rank - 1; i >= 0; --i) {
        out[i] = stride;
        stride *= sizes[i] + pick(0, 2);
      }
      if (rank > 1 && pick(0, 3) == 0)
        std::swap(out[0], out[rank - 1]);
    };
    strides(srcStrides);
    strides(dstStrides);
    expectSameAsReference({pick(0, 1) ? 4 : 2, pick(0, 9), srcStrides,
                           pick(0, 9), dstStrides, sizes});
  }
}

} // namespace
