//===- TilingTest.cpp - attention and norm tiles from byte budgets --------===//

#include "tgc/Target/Tiling.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tgc;

namespace {

// B, S, Skv, Hkv, G, bytes per element.
const AttentionShape kLlama{4, 2048, 2048, 8, 4, 4};
const AttentionShape kShort{1, 7, 7, 1, 1, 2};
const AttentionShape kPrime{3, 1009, 1009, 5, 7, 4};

/// Every tile: at least 16 positions unless the sequence is shorter, at
/// most the sequence, a multiple of 16 above 16.
void expectWellFormed(int64_t tile, const AttentionShape &shape) {
  EXPECT_GE(tile, std::min<int64_t>(16, shape.positions()));
  EXPECT_LE(tile, shape.positions());
  if (tile > 16 && tile < shape.positions())
    EXPECT_EQ(tile % 16, 0);
}

TEST(Tiling, BatchedTilesFitTheirBudget) {
  for (const AttentionShape &shape : {kLlama, kShort, kPrime})
    for (int64_t bytes : {int64_t(1) << 10, int64_t(64) << 10, int64_t(4) << 20,
                          int64_t(1) << 30}) {
      int64_t t = batchedTilePositions(shape, bytes);
      expectWellFormed(t, shape);
      int64_t scores = shape.batch * shape.keyValueHeads * shape.groupSize * t *
                       t * shape.elementBytes;
      if (t > 16)
        EXPECT_LE(scores, bytes) << "T = " << t;
    }
}

TEST(Tiling, TaskTilesFitTheirBudget) {
  for (const AttentionShape &shape : {kLlama, kShort, kPrime})
    for (int64_t bytes :
         {int64_t(1) << 10, int64_t(64) << 10, int64_t(1) << 20}) {
      int64_t t = taskTilePositions(shape, bytes);
      expectWellFormed(t, shape);
      if (t > 16)
        EXPECT_LE(shape.groupSize * t * t * shape.elementBytes, bytes);
    }
}

TEST(Tiling, KnownSizes) {
  // √(4 MiB / (4·8·4·4)) = 90.5 → 80; √(64 KiB / (4·4)) = 64.
  EXPECT_EQ(batchedTilePositions(kLlama, 4 << 20), 80);
  EXPECT_EQ(taskTilePositions(kLlama, 64 << 10), 64);
  // A sequence shorter than the smallest tile is one tile.
  EXPECT_EQ(batchedTilePositions(kShort, 4 << 20), 7);
  EXPECT_EQ(taskTilePositions(kShort, 1), 7);
  // Tiny budgets still give 16 positions.
  EXPECT_EQ(taskTilePositions(kPrime, 1), 16);
  // A budget past the whole sequence: the sequence.
  EXPECT_EQ(batchedTilePositions(kPrime, int64_t(1) << 40), 1009);
}

} // namespace
