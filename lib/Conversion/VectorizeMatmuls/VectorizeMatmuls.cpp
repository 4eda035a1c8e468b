//===- VectorizeMatmuls.cpp - CPU tiling and vectorisation of matmuls -----===//
//
// The schedule follows shared/recipes/cpu/schedule_vec.mlir (checked on this
// MLIR): cache tiles, register tiles, vectorize, fold aliases, CSE + LICM,
// hoist the accumulator, contraction → outer products. Tile sizes are picked
// per matmul so that they divide its sizes: full tiles vectorise without
// masks (masked partial tiles made the cleanup patterns blow up).
//
//===----------------------------------------------------------------------===//

#include "tgc/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace mlir::tg {
#define GEN_PASS_DEF_TGCVECTORIZEMATMULSPASS
#include "tgc/Conversion/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kScheduleAttr = "tgc.matmul_schedule";

/// Largest multiple of `step` that divides `n` and is at most `limit`.
int64_t divisorTile(int64_t n, int64_t step, int64_t limit) {
  for (int64_t t = (limit / step) * step; t >= step; t -= step)
    if (n % t == 0)
      return t;
  return 0;
}

struct Tiles {
  int64_t mt, nt, kt, mr, nr;
  bool batched = false;
  std::string key() const {
    return llvm::formatv("{0}{1}x{2}x{3}_{4}x{5}", batched ? "b" : "", mt, nt, kt, mr, nr)
        .str();
  }
};

std::optional<Tiles> chooseTiles(int64_t m, int64_t n, int64_t k) {
  Tiles t;
  t.nr = n % 32 == 0 ? 32 : n % 16 == 0 ? 16 : n % 8 == 0 ? 8 : 0;
  t.mr = m % 8 == 0 ? 8 : m % 4 == 0 ? 4 : m % 2 == 0 ? 2 : 1;
  if (!t.nr)
    return std::nullopt;
  t.mt = divisorTile(m, t.mr, 64);
  t.nt = divisorTile(n, t.nr, 128);
  t.kt = divisorTile(k, 1, 128);
  return t;
}

std::string scheduleFor(const std::map<std::string, Tiles> &configs) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "module attributes {transform.with_named_sequence} {\n"
        "transform.named_sequence @__transform_main(%root: !transform.any_op "
        "{transform.readonly}) {\n";
  for (auto &[key, t] : configs) {
    std::string b = t.batched ? "1, " : "";
    os << llvm::formatv(
        "  %mm_{0} = transform.structured.match ops{{[\"linalg.matmul\", \"linalg.batch_matmul\"]} "
        "attributes{{{1} = \"{0}\"} in %root : (!transform.any_op) -> !transform.any_op\n"
        // Output tiles in parallel (scf.forall → OpenMP), then the K cache
        // tile and the register tile, sequential inside each.
        "  %p_{0}, %pl_{0} = transform.structured.tile_using_forall %mm_{0} tile_sizes "
        "[{8}{2}, {3}] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n"
        "  %a_{0}, %la_{0} = transform.structured.tile_using_for %p_{0} tile_sizes "
        "[{10}0, 0, {4}] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n"
        "  %b_{0}, %lb_{0}:{7} = transform.structured.tile_using_for %a_{0} tile_sizes "
        "[{8}{5}, {6}, 1] : (!transform.any_op) -> (!transform.any_op, {9})\n"
        "  transform.structured.vectorize %b_{0} : !transform.any_op\n",
        key, kScheduleAttr, t.mt, t.nt, t.kt, t.mr, t.nr, t.batched ? 4 : 3, b,
        t.batched ? "!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op"
                  : "!transform.any_op, !transform.any_op, !transform.any_op",
        t.batched ? "0, " : "");
  }
  os << R"mlir(
  %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
  transform.foreach %funcs : !transform.any_op {
  ^bb0(%f: !transform.any_op):
  transform.apply_patterns to %f {
    transform.apply_patterns.vector.reduction_to_contract
    transform.apply_patterns.vector.transfer_permutation_patterns
    transform.apply_patterns.memref.fold_memref_alias_ops
    transform.apply_patterns.canonicalization
  } : !transform.any_op
  transform.apply_cse to %f : !transform.any_op
  %loops = transform.structured.match ops{["scf.for"]} in %f : (!transform.any_op) -> !transform.any_op
  transform.apply_licm to %loops : !transform.any_op
  %f2 = transform.structured.hoist_redundant_vector_transfers %f : (!transform.any_op) -> !transform.any_op
  transform.apply_patterns to %f2 {
    transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
    transform.apply_patterns.vector.transfer_permutation_patterns
    transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
    transform.apply_patterns.vector.lower_outerproduct
    transform.apply_patterns.vector.lower_broadcast
    transform.apply_patterns.vector.lower_shape_cast
    transform.apply_patterns.canonicalization
  } : !transform.any_op
  }
  transform.yield
}
}
)mlir";
  return s;
}

struct TGCVectorizeMatmulsPass
    : tg::impl::TGCVectorizeMatmulsPassBase<TGCVectorizeMatmulsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::map<std::string, Tiles> configs;
    module.walk([&](linalg::LinalgOp op) {
      bool batched = llvm::isa<linalg::BatchMatmulOp>(op);
      if (!batched && !llvm::isa<linalg::MatmulOp>(op))
        return;
      auto a = llvm::dyn_cast<MemRefType>(op.getDpsInputs()[0].getType());
      auto b = llvm::dyn_cast<MemRefType>(op.getDpsInputs()[1].getType());
      if (!a || !b || !a.hasStaticShape() || !b.hasStaticShape() ||
          !op.hasPureBufferSemantics())
        return;
      // Loop ranges (…, M, N, K) whatever the operands' layouts.
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      size_t r = ranges.size();
      std::optional<Tiles> t = chooseTiles(ranges[r - 3], ranges[r - 2], ranges[r - 1]);
      if (!t)
        return;
      t->batched = batched;
      configs.emplace(t->key(), *t);
      op->setAttr(kScheduleAttr, StringAttr::get(&getContext(), t->key()));
    });
    if (configs.empty())
      return;
    OwningOpRef<ModuleOp> schedule =
        parseSourceString<ModuleOp>(scheduleFor(configs), &getContext());
    if (!schedule) {
      module.emitError("tgc-vectorize-matmuls: internal error: bad schedule");
      return signalPassFailure();
    }
    Operation *entry = nullptr;
    schedule->walk([&](transform::NamedSequenceOp seq) { entry = seq; });
    if (failed(transform::applyTransformNamedSequence(
            module, entry, *schedule, transform::TransformOptions())))
      return signalPassFailure();
    module.walk([](Operation *op) { op->removeAttr(kScheduleAttr); });
  }
};

} // namespace
