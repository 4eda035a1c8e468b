//===- TileModelTest.cpp - the CPU's matmul tile sizes --------------------===//

#include "tgc/Target/CPU/TileModel.h"

#include <gtest/gtest.h>

using namespace tgc::cpu;

namespace {

// AVX-512 (Zen 4/5, Sapphire Rapids), AVX2 (Haswell to Zen 3), SSE/NEON.
const VectorUnit kAVX512{16, 32, 32 << 10, 1 << 20};
const VectorUnit kAVX2{8, 16, 32 << 10, 512 << 10};
const VectorUnit kSSE{4, 16, 32 << 10, 256 << 10};

/// What every choice must satisfy for an M x N x K product.
void expectWellFormed(const MatmulTiles &t, int64_t m, int64_t n, int64_t k,
                      const VectorUnit &unit) {
  EXPECT_GE(t.mr, 1);
  EXPECT_LE(t.mr, std::max<int64_t>(m, 1));
  EXPECT_EQ(t.nr % unit.lanes, 0) << "register tiles hold whole vectors";
  EXPECT_TRUE(isFastVectorCount(t.nr / unit.lanes));
  // Accumulators, B loads and a broadcast of A fit the registers.
  int64_t vectors = t.nr / unit.lanes;
  EXPECT_LE(t.mr * vectors + vectors + 1, unit.registers);
  EXPECT_EQ(t.mt % t.mr, 0);
  EXPECT_EQ(t.nt % t.nr, 0);
  EXPECT_GE(t.kt, 1);
  EXPECT_LE(t.kt, k);
  // The K slice of B in half of L1 (unless K itself is smaller than 16).
  EXPECT_LE(t.kt * t.nr * 4, std::max<int64_t>(unit.l1 / 2, 16 * t.nr * 4));
}

TEST(TileModel, FastVectorCounts) {
  EXPECT_TRUE(isFastVectorCount(1));
  EXPECT_TRUE(isFastVectorCount(2));
  EXPECT_FALSE(isFastVectorCount(3));
  EXPECT_TRUE(isFastVectorCount(4));
  EXPECT_FALSE(isFastVectorCount(6));
  EXPECT_FALSE(isFastVectorCount(0));
}

TEST(TileModel, RegisterTileRows) {
  EXPECT_EQ(registerTileRows(1, kAVX512), 8); // capped at 8
  EXPECT_EQ(registerTileRows(4, kAVX512), 6); // (32 - 5) / 4
  EXPECT_EQ(registerTileRows(2, kAVX2), 6);   // (16 - 3) / 2
  EXPECT_EQ(registerTileRows(4, kAVX2), 2);   // (16 - 5) / 4
  EXPECT_EQ(registerTileRows(8, {16, 8, 0, 0}), 1);
}

TEST(TileModel, RegisterTilePerCPU) {
  // Most FMAs per load among 1, 2 and 4 vectors: 6 x 64 on AVX-512, 6 x 16
  // on AVX2 (4 x 24, three vectors, would score best and not stay in
  // registers), 6 x 8 with 4 lanes.
  MatmulTiles avx512 = chooseTiles(512, 512, 512, 1, kAVX512, 1);
  EXPECT_EQ(avx512.mr, 6);
  EXPECT_EQ(avx512.nr, 64);
  MatmulTiles avx2 = chooseTiles(512, 512, 512, 1, kAVX2, 1);
  EXPECT_EQ(avx2.mr, 6);
  EXPECT_EQ(avx2.nr, 16);
  MatmulTiles sse = chooseTiles(512, 512, 512, 1, kSSE, 1);
  EXPECT_EQ(sse.mr, 6);
  EXPECT_EQ(sse.nr, 8);
  for (const auto &[t, unit] : {std::pair(avx512, kAVX512),
                                std::pair(avx2, kAVX2), std::pair(sse, kSSE)})
    expectWellFormed(t, 512, 512, 512, unit);
}

TEST(TileModel, CacheTiles) {
  // K tile: 32 KiB L1 / 2 / (64 columns x 4 bytes) = 64 rows of B.
  MatmulTiles t = chooseTiles(512, 512, 512, 1, kAVX512, 1);
  EXPECT_EQ(t.kt, 64);
  // A larger L1 deepens it, up to 512.
  MatmulTiles bigL1 =
      chooseTiles(512, 512, 4096, 1, {16, 32, 1 << 20, 1 << 22}, 1);
  EXPECT_EQ(bigL1.kt, 512);
  // Enough output tiles for the threads: at least 16 where each stays 4
  // register tiles deep.
  int64_t tiles = ((512 + t.mt - 1) / t.mt) * ((512 + t.nt - 1) / t.nt);
  EXPECT_GE(tiles, 16);
}

TEST(TileModel, NarrowAndAwkwardShapes) {
  // N = 40 on AVX-512: three vectors round down to two (the rest is peeled
  // in whole vectors); the registers freed go to rows.
  MatmulTiles n40 = chooseTiles(64, 40, 64, 1, kAVX512, 1);
  EXPECT_EQ(n40.nr, 32);
  EXPECT_EQ(n40.mr, 8);
  // One column, one row, primes, the GPT-2 vocabulary.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                         {1, 50257, 768},
                         {50257, 768, 1},
                         {97, 13, 31},
                         {7, 7, 7},
                         {4096, 50257, 768}})
    for (const VectorUnit &unit : {kAVX512, kAVX2, kSSE}) {
      MatmulTiles t = chooseTiles(m, n, k, 1, unit, 2);
      SCOPED_TRACE(t.key());
      expectWellFormed(t, m, n, k, unit);
    }
  EXPECT_EQ(chooseTiles(1, 1, 1, 1, kAVX512, 1).mr, 1);
  EXPECT_EQ(chooseTiles(1, 1, 1, 1, kAVX512, 1).nr, 16);
}

TEST(TileModel, StaticBalance) {
  // 256 rows in 24-row tiles: 10 tiles and one of 16 rows; on 2 threads the
  // first takes 6 tiles (144 rows), the second 5 (112): 256 / (2 x 144).
  EXPECT_DOUBLE_EQ(staticBalance(1, 256, 16, 24, 16, 2), 256.0 / 288.0);
  EXPECT_DOUBLE_EQ(staticBalance(1, 256, 16, 32, 16, 2), 1.0);
  EXPECT_DOUBLE_EQ(staticBalance(4, 8, 8, 8, 8, 4), 1.0);
}

TEST(TileModel, BalancedForThreads) {
  // The model's tiles for 2 threads share the work at least as evenly as
  // the unbalanced choice, keeping register tiles whole.
  for (auto [m, n] : {std::pair<int64_t, int64_t>{256, 256},
                      {256, 64},
                      {1000, 96},
                      {97, 512}}) {
    MatmulTiles one = chooseTiles(m, n, 256, 1, kAVX512, 1);
    MatmulTiles two = chooseTiles(m, n, 256, 1, kAVX512, 2);
    EXPECT_EQ(two.mr, one.mr);
    EXPECT_EQ(two.nr, one.nr);
    EXPECT_EQ(two.kt, one.kt);
    EXPECT_GE(staticBalance(1, m, n, two.mt, two.nt, 2),
              staticBalance(1, m, n, one.mt, one.nt, 2))
        << m << "x" << n;
    expectWellFormed(two, m, n, 256, kAVX512);
  }
}

TEST(TileModel, ForcedTiles) {
  std::string error;
  std::optional<MatmulTiles> t =
      forcedTiles({16, 32, 8, 2, 16}, kAVX512, error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(*t, (MatmulTiles{16, 32, 8, 2, 16}));
  EXPECT_EQ(t->key(), "16x32x8_2x16");

  EXPECT_FALSE(forcedTiles({16, 32}, kAVX512, error));
  EXPECT_EQ(error, "tiles=16,32 is not MT,NT,KT,MR,NR (five positive "
                   "integers)");
  EXPECT_FALSE(forcedTiles({16, 32, 0, 2, 16}, kAVX512, error));
  EXPECT_FALSE(forcedTiles({64, 64, 64, 64, 64}, kAVX512, error));
  EXPECT_EQ(error, "register tile 64x64 is too large (at most 16 rows and "
                   "128 columns)");
  EXPECT_FALSE(forcedTiles({64, 96, 64, 8, 48}, kAVX512, error));
  EXPECT_EQ(error, "register tile columns 48 are 3 vectors of 16 lanes: use "
                   "1, 2, 4 or 8 vectors (other counts are not kept in "
                   "registers)");
  // Columns that are not whole vectors are masked, not refused.
  EXPECT_TRUE(forcedTiles({64, 96, 64, 4, 20}, kAVX2, error));
}

} // namespace
