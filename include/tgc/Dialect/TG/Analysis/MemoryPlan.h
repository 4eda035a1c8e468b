//===- MemoryPlan.h - liveness and a static arena plan ----------*- C++ -*-===//
//
// What one training step keeps in memory, measured on the tg graph: every
// intermediate tensor gets a live range over the op schedule (the order of
// the function body) and an offset in one arena. The same offset assignment
// (ArenaPlanner) places the bufferized step's buffers in the compiled code,
// so the figures here are the compiler's plan, not an estimate of it.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DIALECT_TG_ANALYSIS_MEMORYPLAN_H
#define TGC_DIALECT_TG_ANALYSIS_MEMORYPLAN_H

#include "tgc/Support/Format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tg {

/// One block of an arena: `bytes` live over the schedule positions
/// [start, end] (inclusive).
struct ArenaBlock {
  int64_t bytes = 0;
  int64_t start = 0, end = 0;
  int64_t offset = -1; // set by assignArenaOffsets
};

/// Places every block at an offset (multiple of `alignment`) such that
/// blocks live at the same time never overlap: largest block first, each at
/// the lowest offset free during its whole live range (the greedy-by-size
/// heuristic of TFLite's and XLA's planners). Returns the arena size.
int64_t assignArenaOffsets(std::vector<ArenaBlock> &blocks,
                           int64_t alignment = 64);

/// One intermediate tensor of the step. Values that share storage after
/// bufferization (tg.reshape and tg.slice results and their operands) form
/// one buffer.
struct PlannedBuffer {
  SmallVector<Value> values; // the first is the defining value
  ArenaBlock block;
};

struct MemoryPlan {
  /// The function body's ops in schedule order (the terminator last).
  std::vector<Operation *> schedule;
  std::vector<PlannedBuffer> buffers;
  /// Size of the arena: the planned peak of intermediate memory.
  int64_t arenaBytes = 0;
  /// Most bytes live at once (a lower bound for any arena).
  int64_t maxLiveBytes = 0;
  /// Schedule position where maxLiveBytes is reached.
  int64_t peakPosition = 0;
  /// Bytes live while schedule[i] executes.
  std::vector<int64_t> liveBytes;
};

/// Plans `func`'s intermediates: results of ops in its body, except
/// constants (read-only data) and values the function returns (they are
/// written to the caller's buffers). Arguments (weights, optimizer state,
/// batch) are not in the arena.
MemoryPlan planMemory(func::FuncOp func);

using tgc::formatBytes;

/// Bytes of a statically shaped tensor or memref type (0 for others).
int64_t getTypeBytes(Type type);
/// Bytes of a statically shaped tensor or memref value.
int64_t getValueBytes(Value value);

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_ANALYSIS_MEMORYPLAN_H
