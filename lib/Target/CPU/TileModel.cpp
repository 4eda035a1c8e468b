//===- TileModel.cpp - the CPU's matmul tile sizes ------------------------===//
//
// See tgc/Target/CPU/TileModel.h and tgc-vectorize-matmuls' description.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CPU/TileModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <tuple>

using namespace tgc::cpu;
using llvm::SmallVector;

std::string MatmulTiles::key() const {
  return llvm::formatv("{0}{1}x{2}x{3}_{4}x{5}", batched ? "b" : "", mt, nt, kt,
                       mr, nr)
      .str();
}

int64_t tgc::cpu::roundUp(int64_t x, int64_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

bool tgc::cpu::isFastVectorCount(int64_t vectors) {
  return vectors > 0 && llvm::isPowerOf2_64(vectors);
}

int64_t tgc::cpu::registerTileRows(int64_t vectors, const VectorUnit &cpu) {
  return std::clamp<int64_t>((cpu.registers - vectors - 1) / vectors, 1, 8);
}

double tgc::cpu::staticBalance(int64_t batch, int64_t m, int64_t n, int64_t mt,
                               int64_t nt, int64_t threads) {
  SmallVector<int64_t> work;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; i += mt)
      for (int64_t j = 0; j < n; j += nt)
        work.push_back(std::min(mt, m - i) * std::min(nt, n - j));
  int64_t count = work.size(), total = 0, largest = 0, next = 0;
  for (int64_t t = 0; t < threads; ++t) {
    int64_t share = 0;
    for (int64_t e = next + count / threads + (t < count % threads ? 1 : 0);
         next < e; ++next)
      share += work[next];
    total += share;
    largest = std::max(largest, share);
  }
  return double(total) / double(threads * largest);
}

/// Output tiles of the same or fewer rows and columns of tiles than the
/// model asked for (so each stays as deep), picked so that a static split
/// among `threads` is even: the last row of tiles is often short (256
/// rows of 6-row register tiles make 10 tiles of 24 rows and one of 16:
/// 144 and 112 rows on 2 threads). Among splits within 1% of the most even
/// one, the most tiles.
static void balanceTiles(MatmulTiles &t, int64_t batch, int64_t m, int64_t n,
                         int64_t tilesM, int64_t tilesN, int64_t threads) {
  auto sizes = [](int64_t size, int64_t tiles, int64_t reg) {
    SmallVector<int64_t> options;
    for (int64_t c = 1; c <= tiles; ++c)
      options.push_back(roundUp((size + c - 1) / c, reg));
    llvm::sort(options);
    options.erase(std::unique(options.begin(), options.end()), options.end());
    return options;
  };
  SmallVector<int64_t> rows = sizes(m, tilesM, t.mr),
                       cols = sizes(n, tilesN, t.nr);
  double best = 0;
  SmallVector<std::tuple<double, int64_t, int64_t, int64_t>> scored;
  for (int64_t mt : rows)
    for (int64_t nt : cols) {
      double balance = staticBalance(batch, m, n, mt, nt, threads);
      best = std::max(best, balance);
      scored.push_back(
          {balance, ((m + mt - 1) / mt) * ((n + nt - 1) / nt), mt, nt});
    }
  int64_t mostTiles = 0;
  for (auto [balance, tiles, mt, nt] : scored)
    if (balance >= best - 0.01 && tiles > mostTiles)
      mostTiles = tiles, t.mt = mt, t.nt = nt;
}

MatmulTiles tgc::cpu::chooseTiles(int64_t m, int64_t n, int64_t k,
                                  int64_t batch, const VectorUnit &cpu,
                                  int64_t threads) {
  MatmulTiles t;
  // Register tile: most FMAs per load (MR·V / (MR + V)), wider on ties, of
  // V = 1, 2 or 4 vectors (isFastVectorCount: 3 would score best on 16
  // registers, as 4 x 24 on AVX2, and run 10x slower).
  int64_t bestVectors = 1;
  double bestScore = 0;
  for (int64_t v = 1; v <= 4; ++v) {
    if (!isFastVectorCount(v))
      continue;
    int64_t r = registerTileRows(v, cpu);
    double score = double(r * v) / double(r + v);
    if (score >= bestScore)
      bestScore = score, bestVectors = v;
  }
  // Narrow N: no wider than N rounded up to whole vectors (down to a power
  // of two: the remainder is peeled in whole vectors); the registers freed
  // go to rows.
  int64_t vectors = llvm::bit_floor(static_cast<uint64_t>(
      std::min(bestVectors, roundUp(n, cpu.lanes) / cpu.lanes)));
  t.nr = vectors * cpu.lanes;
  t.mr = std::min(registerTileRows(vectors, cpu), m);
  // K tile: the KT x NR slice of B in half of L1.
  t.kt = std::min(k, std::clamp<int64_t>(cpu.l1 / 2 / (t.nr * 4), 16, 512));
  // Output tile: the KT-deep panels of B (KT x NT) and A (MT x KT) in L2.
  int64_t panel = std::max<int64_t>(1, cpu.l2 / 4 / (t.kt * 4));
  int64_t tilesM = (m + panel - 1) / panel, tilesN = (n + panel - 1) / panel;
  // Enough tiles for the threads (at least 16 where a tile stays at least 4
  // register tiles deep), split the long side first; tiles of one dimension
  // are balanced so a static schedule shares them evenly.
  auto deep = [&](int64_t size, int64_t tilesCount, int64_t reg) {
    return (size + tilesCount) / (tilesCount + 1) >= 4 * reg;
  };
  while (tilesM * tilesN < 16) {
    bool splitM = deep(m, tilesM, t.mr), splitN = deep(n, tilesN, t.nr);
    if (splitM && (!splitN || m / tilesM >= n / tilesN))
      ++tilesM;
    else if (splitN)
      ++tilesN;
    else
      break;
  }
  t.mt = roundUp((m + tilesM - 1) / tilesM, t.mr);
  t.nt = roundUp((n + tilesN - 1) / tilesN, t.nr);
  // With 64 tiles a thread or more, a short tile is under 2% of a share.
  if (threads > 1 && batch * tilesM * tilesN < 64 * threads)
    balanceTiles(t, batch, m, n, tilesM, tilesN, threads);
  return t;
}

std::optional<MatmulTiles> tgc::cpu::forcedTiles(llvm::ArrayRef<int64_t> sizes,
                                                 const VectorUnit &unit,
                                                 std::string &error) {
  if (sizes.size() != 5 ||
      llvm::any_of(sizes, [](int64_t size) { return size <= 0; })) {
    std::string given;
    for (auto [i, size] : llvm::enumerate(sizes))
      given += (i ? "," : "") + std::to_string(size);
    error =
        "tiles=" + given + " is not MT,NT,KT,MR,NR (five positive integers)";
    return std::nullopt;
  }
  MatmulTiles t;
  t.mt = sizes[0], t.nt = sizes[1], t.kt = sizes[2], t.mr = sizes[3],
  t.nr = sizes[4];
  // Register tiles are unrolled: bound them so a typo cannot explode code.
  if (t.mr > 16 || t.nr > 8 * unit.lanes) {
    error = llvm::formatv("register tile {0}x{1} is too large (at most 16 "
                          "rows and {2} columns)",
                          t.mr, t.nr, 8 * unit.lanes)
                .str();
    return std::nullopt;
  }
  if (t.nr % unit.lanes == 0 && !isFastVectorCount(t.nr / unit.lanes)) {
    error = llvm::formatv("register tile columns {0} are {1} vectors of {2} "
                          "lanes: use 1, 2, 4 or 8 vectors (other counts are "
                          "not kept in registers)",
                          t.nr, t.nr / unit.lanes, unit.lanes)
                .str();
    return std::nullopt;
  }
  return t;
}
