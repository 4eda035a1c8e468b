//===- SupportTest.cpp - the generic helpers ------------------------------===//

#include "tgc/Support/Chunking.h"
#include "tgc/Support/Format.h"
#include "tgc/Support/MinCut.h"
#include "tgc/Support/NamePattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace tgc;

namespace {

// CLRS figure 26.1: maximum flow 23; the minimum cut separates {s, v1, v2, v4}.
TEST(MinCut, TextbookNetwork) {
  enum { s, v1, v2, v3, v4, t };
  MinCut cut(6);
  cut.addEdge(s, v1, 16);
  cut.addEdge(s, v2, 13);
  cut.addEdge(v2, v1, 4);
  cut.addEdge(v1, v3, 12);
  cut.addEdge(v3, v2, 9);
  cut.addEdge(v2, v4, 14);
  cut.addEdge(v4, v3, 7);
  cut.addEdge(v3, t, 20);
  cut.addEdge(v4, t, 4);
  std::vector<bool> side = cut.solve(s, t);
  EXPECT_EQ(cut.flow(), 23);
  EXPECT_EQ(side, (std::vector<bool>{true, true, true, false, true, false}));
}

TEST(MinCut, InfiniteEdgesAreNeverCut) {
  // s -inf-> a -5-> t, s -3-> b -inf-> t: the cut takes 5 and 3.
  MinCut cut(4);
  cut.addEdge(0, 1, MinCut::kInfinite);
  cut.addEdge(1, 3, 5);
  cut.addEdge(0, 2, 3);
  cut.addEdge(2, 3, MinCut::kInfinite);
  std::vector<bool> side = cut.solve(0, 3);
  EXPECT_EQ(cut.flow(), 8);
  EXPECT_TRUE(side[1]);
  EXPECT_FALSE(side[2]);
}

TEST(MinCut, DisconnectedSinkHasZeroFlow) {
  MinCut cut(3);
  cut.addEdge(0, 1, 7);
  std::vector<bool> side = cut.solve(0, 2);
  EXPECT_EQ(cut.flow(), 0);
  EXPECT_EQ(side, (std::vector<bool>{true, true, false}));
}

// On random graphs the flow equals the capacity of the cut it returns
// (max-flow min-cut), and that capacity is minimal against brute force.
TEST(MinCut, RandomGraphsMatchBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 2 + rng() % 6;
    struct E {
      int from, to;
      int64_t cap;
    };
    std::vector<E> edgeList;
    MinCut cut(n);
    for (int k = 0, m = rng() % 12; k < m; ++k) {
      E e{int(rng() % n), int(rng() % n), int64_t(rng() % 10)};
      if (e.from == e.to)
        continue;
      edgeList.push_back(e);
      cut.addEdge(e.from, e.to, e.cap);
    }
    std::vector<bool> side = cut.solve(0, n - 1);
    auto capacity = [&](auto inSource) {
      int64_t c = 0;
      for (const E &e : edgeList)
        if (inSource(e.from) && !inSource(e.to))
          c += e.cap;
      return c;
    };
    ASSERT_TRUE(side[0]);
    ASSERT_FALSE(side[n - 1]);
    EXPECT_EQ(cut.flow(), capacity([&](int v) { return bool(side[v]); }));
    int64_t best = INT64_MAX;
    for (unsigned mask = 0; mask < (1u << n); ++mask)
      if ((mask & 1) && !(mask >> (n - 1) & 1))
        best = std::min(best,
                        capacity([&](int v) { return bool(mask >> v & 1); }));
    EXPECT_EQ(cut.flow(), best) << "trial " << trial;
  }
}

TEST(Chunking, BalancedSizes) {
  // 767 rows of 50257 f32 logits, 64 MiB: 333 rows fit, so 3 chunks of 256.
  EXPECT_EQ(balancedChunkSize(767, 50257 * 4, 64 << 20, 256), 256);
  // The minimum wins over the byte budget; never more than the total.
  // (1000 rows in chunks of 64 is 16 chunks, balanced to 63 rows.)
  EXPECT_EQ(balancedChunkSize(1000, 1 << 20, 1 << 20, 64), 63);
  EXPECT_EQ(balancedChunkSize(10, 4, 1 << 20, 64), 10);
  EXPECT_EQ(balancedChunkSize(1, 4, 1, 1), 1);
  // Every chunk is at most the budget's size, and they cover the total.
  for (int64_t total : {1, 2, 37, 50257, 100003})
    for (int64_t budget : {1, 100, 4096})
      for (int64_t minimum : {1, 7}) {
        int64_t chunk = balancedChunkSize(total, 4, budget, minimum);
        int64_t cap = std::min(total, std::max(minimum, budget / 4));
        EXPECT_GE(chunk, 1);
        EXPECT_LE(chunk, std::max<int64_t>(1, cap));
        int64_t chunks = (total + chunk - 1) / chunk;
        EXPECT_EQ(chunks, (total + std::max<int64_t>(1, cap) - 1) /
                              std::max<int64_t>(1, cap));
      }
}

TEST(Format, Bytes) {
  EXPECT_EQ(formatBytes(0), "0.00 B");
  EXPECT_EQ(formatBytes(1023), "1023.00 B");
  EXPECT_EQ(formatBytes(1024), "1.00 KiB");
  EXPECT_EQ(formatBytes(87752704), "83.69 MiB");
  EXPECT_EQ(formatBytes(int64_t(3) << 40), "3.00 TiB");
  EXPECT_EQ(formatBytes(int64_t(5) << 50), "5120.00 TiB");
}

TEST(Format, Counts) {
  EXPECT_EQ(withCommas(0), "0");
  EXPECT_EQ(withCommas(999), "999");
  EXPECT_EQ(withCommas(124439808), "124,439,808");
  EXPECT_EQ(withCommas(-1234567), "-1,234,567");
  EXPECT_EQ(humanCount(999999), "999,999");
  EXPECT_EQ(humanCount(1250000000), "1.25 G");
  EXPECT_EQ(humanCount(3400000000000), "3.40 T");
}

// Whole-name matches (Python's re.fullmatch) in ECMAScript syntax, which
// reads the Python patterns PEFT users write the same way.
TEST(NamePattern, FullMatchOfPythonStylePatterns) {
  auto matches = [](llvm::StringRef pattern, llvm::StringRef name) {
    llvm::Expected<NamePattern> re = NamePattern::compile(pattern);
    EXPECT_TRUE(static_cast<bool>(re)) << llvm::toString(re.takeError());
    return re && re->matches(name);
  };
  llvm::StringRef q = "model.layers.10.self_attn.q_proj.weight";
  EXPECT_TRUE(matches(R"(model\.layers\.\d+\..*)", q));
  EXPECT_TRUE(matches(R"(.*\.(q|k|v)_proj\.weight)", q));
  EXPECT_TRUE(matches(R"((?:model\.)?layers\.1[0-9]\..*?)", "layers.12.mlp"));
  EXPECT_TRUE(matches(R"((?!lm_head).*)", q));
  EXPECT_FALSE(matches(R"((?!lm_head).*)", "lm_head.weight"));
  // Whole names only: a pattern that matches a part selects nothing.
  EXPECT_FALSE(matches("layers", q));
  EXPECT_FALSE(matches(R"(model\.layers\.1\..*)", q));
  EXPECT_FALSE(matches("q_proj", q));
  EXPECT_EQ(NamePattern::compile("a|b")->text(), "a|b");
}

TEST(NamePattern, MalformedPatternsAreErrors) {
  for (llvm::StringRef bad : {"(", "[a-", "a{2,1}", "*a", "(?P<n>a)"}) {
    llvm::Expected<NamePattern> re = NamePattern::compile(bad);
    ASSERT_FALSE(static_cast<bool>(re)) << bad.str();
    std::string message = llvm::toString(re.takeError());
    EXPECT_NE(message.find("'" + bad.str() + "' is not a regular expression"),
              std::string::npos)
        << message;
  }
}

} // namespace
