//===- Fusion.h - the transforms of tgc-fuse-elementwise --------*- C++ -*-===//
//
// tgc-fuse-elementwise runs upstream's producer-consumer fusion with these
// transforms around it, one file each; Placement.cpp holds the checks they
// share (what may move where without reading a value after its in-place
// update).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TRANSFORMS_FUSEELEMENTWISE_FUSION_H
#define TGC_TRANSFORMS_FUSEELEMENTWISE_FUSION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::tg::fusion {

/// For every function, its arguments that a result overwrites in place
/// (new parameters and state): (function, argument number) → result number.
using InPlaceResults =
    llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned>;
InPlaceResults findInPlaceResults(ModuleOp module);

/// Bounded fan-in: a fused op is one GPU kernel, whose parameters (several
/// words per buffer) PTX limits to 4 KiB.
constexpr unsigned kMaxFusedInputs = 40;

/// Marks a transpose turned into a generic while fusion runs.
constexpr llvm::StringLiteral kPermutationAttr = "tgc.transpose_permutation";

/// Whether an op reading `inputs` may run at `at`: not after the op that
/// overwrites one of them in place.
bool readsBeforeUpdates(const InPlaceResults &inPlace, ValueRange inputs,
                        Operation *at);

/// Whether an op between `reader` and `at` overwrites in place what
/// `reader` reads.
bool overwrittenBetween(linalg::GenericOp reader, Operation *at);

/// Fresh tensors, fills of them, reshapes and constants.
bool movesNoTensorData(Operation *op);

/// Whether the ops between `earlier` and `later` (at most a few) only read
/// `earlier`'s results, directly or through each other, or move no data.
bool onlyDependentsBetween(Operation *earlier, Operation *later);

/// Whether only ops that move no data lie between `earlier` and `later`.
bool onlyFreshTensorsBetween(Operation *earlier, Operation *later);

/// Fuses sibling generics (same loops, a common input) until none are
/// left; returns whether it fused any.
bool fuseAllSiblings(Operation *root, const InPlaceResults &inPlace);

/// One transpose per (tensor, permutation) where the tensor has no other
/// reader.
void reuseTransposes(func::FuncOp func);

/// Transposes as generics marked with kPermutationAttr while fusion runs,
/// and back.
void generalizeTransposes(ModuleOp module);
void respecializeTransposes(ModuleOp module);

/// A sum of products' results becomes the products accumulating into one.
void accumulateSummedProducts(func::FuncOp func);

/// Elementwise loops that read the rows a parallel task computes run inside
/// the task.
void fuseConsumersIntoTasks(func::FuncOp func);

/// Casts widening a saved bf16/f16 copy are folded into their readers.
void fuseWideningIntoReaders(func::FuncOp func, const InPlaceResults &inPlace);

} // namespace mlir::tg::fusion

#endif // TGC_TRANSFORMS_FUSEELEMENTWISE_FUSION_H
