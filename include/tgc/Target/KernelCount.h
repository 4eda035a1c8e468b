//===- KernelCount.h - kernels and bytes of a scheduled step ----*- C++ -*-===//
//
// What `tgc stats --memory` reports as kernels and bytes moved, read off
// the step after the target's own schedule ran (TargetBackend::
// buildSchedulePipeline): what the schedule fused into a product's tiles or
// keeps inside a parallel task is no kernel and no trip to memory of its
// own, with no model of the schedule to keep in step with it.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_KERNELCOUNT_H
#define TGC_TARGET_KERNELCOUNT_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

/// Kernels and bytes moved, in total and per source: the model module an
/// op was lowered from (its location's name, e.g.
/// "model.layers.0.mlp.act_fn"; forward and backward ops share it) and the
/// kernel's op name, in the step's order.
struct KernelSource {
  std::string module, op;
  int64_t kernels = 0, bytesMoved = 0;
};
struct KernelCounts {
  int64_t kernels = 0;
  int64_t bytesMoved = 0;
  std::vector<KernelSource> bySource;
};

/// Counts the kernels of the scheduled, bufferized `module`. A kernel is a
/// parallel loop (the tasks of a product's tiles, of attention or of a
/// chunked elementwise op; a GPU launch), or a linalg op, memref.copy or loop
/// nest with no kernel inside; a loop around kernels is a host loop, and its
/// kernels count once per iteration (static trip counts). A kernel moves each
/// buffer it reads or writes once: the views it takes from outside itself,
/// not the buffers it makes and frees inside.
void countKernels(mlir::ModuleOp module, KernelCounts &counts);

} // namespace tgc

#endif // TGC_TARGET_KERNELCOUNT_H
