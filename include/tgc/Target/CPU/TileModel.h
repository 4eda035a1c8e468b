//===- TileModel.h - the CPU's matmul tile sizes ----------------*- C++ -*-===//
//
// The analytical model tgc-vectorize-matmuls sizes every product's tiles by:
// a register tile of MR x NR accumulators that fits the vector registers,
// a K tile whose slice of B fits half of L1, output tiles whose panels fit
// L2, enough of them for the threads, balanced for OpenMP's static split.
// Tiles forced by hand (--matmul-tiles) are checked against the same unit.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_CPU_TILEMODEL_H
#define TGC_TARGET_CPU_TILEMODEL_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tgc::cpu {

/// A product's tiles: output tile MT x NT (one parallel task), K tile KT,
/// register tile MR x NR.
struct MatmulTiles {
  int64_t mt = 0, nt = 0, kt = 0, mr = 0, nr = 0;
  /// A batch matmul's (its batch entries are tasks too).
  bool batched = false;
  /// A name for the schedule of products with these tiles.
  std::string key() const;
  bool operator==(const MatmulTiles &other) const {
    return mt == other.mt && nt == other.nt && kt == other.kt &&
           mr == other.mr && nr == other.nr && batched == other.batched;
  }
};

/// The vector unit and caches the model sizes tiles for.
struct VectorUnit {
  int64_t lanes;     // f32 lanes per vector register
  int64_t registers; // vector registers
  int64_t l1, l2;    // bytes per core
};

int64_t roundUp(int64_t x, int64_t multiple);

/// Whether a register tile row of `vectors` vectors compiles to vector
/// registers: the row is one `vector<NR x f32>` of the accumulator tile,
/// rebuilt from its elements each step of K, and LLVM folds that back into
/// registers only for a power-of-two count; other counts are updated
/// element by element through the stack.
bool isFastVectorCount(int64_t vectors);

/// Rows of the register tile that fit beside `vectors` accumulators per
/// row, the `vectors` B loads and one broadcast of A (1 to 8).
int64_t registerTileRows(int64_t vectors, const VectorUnit &unit);

/// How evenly OpenMP's static schedule (contiguous blocks of the
/// iterations, batch-major then row-major) shares `batch` x the MT x NT
/// tiles of an M x N output among `threads`: the work divided by the
/// threads' largest share, 1 when perfectly even.
double staticBalance(int64_t batch, int64_t m, int64_t n, int64_t mt,
                     int64_t nt, int64_t threads);

/// The model's tiles for an M x N x K product (`batch` of them). `threads`
/// > 1: the output tiles are balanced for that many threads.
MatmulTiles chooseTiles(int64_t m, int64_t n, int64_t k, int64_t batch,
                        const VectorUnit &unit, int64_t threads);

/// Tiles given by hand as MT, NT, KT, MR, NR: five positive sizes, a
/// register tile of at most 16 rows and 8 vectors, and whole vectors only
/// in a count isFastVectorCount takes. nullopt, with `error` set, if not.
std::optional<MatmulTiles> forcedTiles(llvm::ArrayRef<int64_t> sizes,
                                       const VectorUnit &unit,
                                       std::string &error);

} // namespace tgc::cpu

#endif // TGC_TARGET_CPU_TILEMODEL_H
