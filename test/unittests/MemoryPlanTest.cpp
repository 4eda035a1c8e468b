//===- MemoryPlanTest.cpp - arena offsets and memory budgets --------------===//

#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/Transforms/Remat.h"

#include <gtest/gtest.h>

using namespace mlir::tg;

namespace {

ArenaBlock block(int64_t bytes, int64_t start, int64_t end) {
  ArenaBlock b;
  b.bytes = bytes;
  b.start = start;
  b.end = end;
  return b;
}

bool overlapInTime(const ArenaBlock &a, const ArenaBlock &b) {
  return a.start <= b.end && b.start <= a.end;
}

TEST(ArenaOffsets, DisjointLifetimesShareMemory) {
  std::vector<ArenaBlock> blocks{block(100, 0, 1), block(100, 2, 3)};
  EXPECT_EQ(assignArenaOffsets(blocks), 128);
  EXPECT_EQ(blocks[0].offset, 0);
  EXPECT_EQ(blocks[1].offset, 0);
}

TEST(ArenaOffsets, OverlappingLifetimesDoNot) {
  std::vector<ArenaBlock> blocks{block(64, 0, 2), block(64, 1, 3),
                                 block(64, 2, 4)};
  EXPECT_EQ(assignArenaOffsets(blocks), 192);
  EXPECT_NE(blocks[0].offset, blocks[1].offset);
  EXPECT_NE(blocks[1].offset, blocks[2].offset);
  EXPECT_NE(blocks[0].offset, blocks[2].offset);
}

TEST(ArenaOffsets, LargestFirstFillsGaps) {
  // The big block sits at 0; the small ones that outlive it go after it,
  // the one that does not reuses its space.
  std::vector<ArenaBlock> blocks{block(1000, 0, 5), block(10, 4, 9),
                                 block(10, 6, 9)};
  EXPECT_EQ(assignArenaOffsets(blocks), 1024 + 64);
  EXPECT_EQ(blocks[0].offset, 0);
  EXPECT_EQ(blocks[1].offset, 1024);
  EXPECT_EQ(blocks[2].offset, 0);
}

TEST(ArenaOffsets, RandomPlansAreValid) {
  // No two blocks live at the same time overlap in memory; every offset is
  // 64-byte aligned; the arena is at least the most bytes live at once.
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaBlock> blocks;
    int n = 1 + next() % 40;
    for (int i = 0; i < n; ++i) {
      int64_t start = next() % 50;
      blocks.push_back(block(1 + next() % 5000, start, start + next() % 20));
    }
    int64_t arena = assignArenaOffsets(blocks);
    int64_t maxLive = 0;
    for (int64_t t = 0; t < 70; ++t) {
      int64_t live = 0;
      for (const ArenaBlock &b : blocks)
        if (b.start <= t && t <= b.end)
          live += (b.bytes + 63) / 64 * 64;
      maxLive = std::max(maxLive, live);
    }
    EXPECT_GE(arena, maxLive);
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_EQ(blocks[i].offset % 64, 0);
      EXPECT_LE(blocks[i].offset + blocks[i].bytes, arena);
      for (size_t j = i + 1; j < blocks.size(); ++j) {
        if (!overlapInTime(blocks[i], blocks[j]))
          continue;
        bool apart = blocks[i].offset + blocks[i].bytes <= blocks[j].offset ||
                     blocks[j].offset + blocks[j].bytes <= blocks[i].offset;
        EXPECT_TRUE(apart) << "trial " << trial << ": blocks " << i << " and "
                           << j;
      }
    }
  }
}

TEST(MemoryBudget, Parses) {
  auto bytes = [](const char *text) {
    llvm::Expected<MemoryBudget> b = parseMemoryBudget(text);
    EXPECT_TRUE(static_cast<bool>(b)) << text;
    if (!b) {
      llvm::consumeError(b.takeError());
      return int64_t(-2);
    }
    return b->bytes;
  };
  EXPECT_EQ(bytes("1073741824"), 1073741824);
  EXPECT_EQ(bytes("1.5GiB"), 1610612736);
  EXPECT_EQ(bytes("512MiB"), 536870912);
  EXPECT_EQ(bytes("800MB"), 800000000);
  EXPECT_EQ(bytes("64KiB"), 65536);
  EXPECT_EQ(bytes("1e9"), 1000000000);
  EXPECT_EQ(bytes("1"), 1);

  llvm::Expected<MemoryBudget> fraction = parseMemoryBudget("0.4");
  ASSERT_TRUE(static_cast<bool>(fraction));
  EXPECT_DOUBLE_EQ(fraction->fraction, 0.4);
  llvm::Expected<MemoryBudget> percent = parseMemoryBudget("40%");
  ASSERT_TRUE(static_cast<bool>(percent));
  EXPECT_DOUBLE_EQ(percent->fraction, 0.4);
}

TEST(MemoryBudget, RejectsNonsense) {
  for (const char *text :
       {"", "lots", "0", "-5", "5XB", "150%", "GiB", "1.5.2GiB"}) {
    llvm::Expected<MemoryBudget> b = parseMemoryBudget(text);
    EXPECT_FALSE(static_cast<bool>(b)) << text;
    if (!b)
      llvm::consumeError(b.takeError());
  }
}

} // namespace
