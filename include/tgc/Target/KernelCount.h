//===- KernelCount.h - kernels and bytes of a scheduled step ----*- C++ -*-===//
//
// What `tgc stats --memory` reports as kernels and bytes moved, counted on
// the bufferized step as a target's schedule will run it. Each backend says
// what its schedule does (TargetBackend::countKernels, with a
// KernelCountModel of its own schedule's predicates); the walk is shared.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_KERNELCOUNT_H
#define TGC_TARGET_KERNELCOUNT_H

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tgc {

/// Every linalg op (and memref.copy) is one kernel, parallel tasks one
/// kernel each; its bytes are those of every buffer it reads or writes. Ops
/// inside loops (the fused loss's chunks, attention's tiles) count once per
/// iteration.
struct KernelSource {
  std::string module, op;
  int64_t kernels = 0, bytesMoved = 0;
};
struct KernelCounts {
  int64_t kernels = 0;
  int64_t bytesMoved = 0;
  /// The same, per source: the model module an op was lowered from (its
  /// location's name, e.g. "model.layers.0.mlp.act_fn"; forward and
  /// backward ops share it) and the op's name, in the step's order.
  std::vector<KernelSource> bySource;
};

/// What a target's schedule does to the bufferized step, as far as counting
/// goes. The defaults: nothing fused into products, nothing kept in cache.
struct KernelCountModel {
  /// Whether the schedule, with fusion on, does `product`'s neighbours
  /// inside its output tiles (tgc/Target/ProductFusion.h): the fill that
  /// zeroes its output, the elementwise loop that reads it right after and,
  /// for f32 products, a layout change of it. They are then no passes over
  /// memory of their own.
  std::function<bool(mlir::Operation *product)> fusesIntoProductTiles =
      [](mlir::Operation *) { return false; };
  /// The loop that rounds f32 values into a buffer only `product` reads,
  /// when the product packs that operand from the f32 values itself (the
  /// loop is then no pass over memory, and the product reads the f32
  /// source); null when none.
  std::function<mlir::Operation *(mlir::Operation *product)> roundingPackedBy =
      [](mlir::Operation *) -> mlir::Operation * { return nullptr; };
  /// A parallel task's own buffers, and its slices of a step buffer that
  /// several of its ops touch, of at most this many bytes stay in its
  /// core's cache: one trip to memory (0: none do).
  int64_t taskCacheBytes = 0;
};

/// Counts the kernels and bytes of the bufferized step `module` (with the
/// casts around its products as the schedule makes them) into `counts`.
void countKernels(mlir::ModuleOp module, mlir::tg::FusionMode fusion,
                  const KernelCountModel &model, KernelCounts &counts);

} // namespace tgc

#endif // TGC_TARGET_KERNELCOUNT_H
