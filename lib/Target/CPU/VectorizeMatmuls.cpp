//===- VectorizeMatmuls.cpp - CPU tiling and vectorisation of matmuls -----===//
//
// Transform-dialect schedules for matmuls of any static shape (after
// shared/recipes/cpu-any-shape): parallel output tiles, a K cache tile,
// MR x NR register tiles with their loops peeled (remainders in whole
// vectors, then single rows), each tile vectorised with its own sizes, then
// FMAs. Tile sizes come from a model of the target CPU (vector width,
// registers, caches); see the pass description.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CPU/Passes.h"

#include "MatmulStages.h"

#include "BF16Products.h"
#include "tgc/Target/CPU/TileModel.h"
#include "tgc/Target/ProductFusion.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <map>

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCCPUSTREAMFEWROWPRODUCTSPASS
#define GEN_PASS_DEF_TGCCPUMARKTILEFUSIONSPASS
#define GEN_PASS_DEF_TGCCPUEMITBF16PRODUCTSPASS
#define GEN_PASS_DEF_TGCCPUWIDENPRODUCTOPERANDSPASS
#define GEN_PASS_DEF_TGCCPUTILEPRODUCTSPASS
#define GEN_PASS_DEF_TGCCPUFUSEINTOTILESPASS
#define GEN_PASS_DEF_TGCCPUVECTORIZEPRODUCTTILESPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;
using namespace tgc::cpu;
using namespace tgc::cpu::matmuls;

namespace tgc::cpu::matmuls {

bool isScheduledProduct(linalg::LinalgOp op) {
  bool batched = llvm::isa<linalg::BatchMatmulOp>(op);
  if (!batched && !llvm::isa<linalg::MatmulOp>(op))
    return false;
  if (batched && !isScheduledBatchLayout(op))
    return false;
  // An empty operand (a zero size) leaves nothing to tile: the loops do it.
  return op.hasPureBufferSemantics() &&
         llvm::all_of(op->getOperandTypes(), [](Type t) {
           auto m = llvm::dyn_cast<MemRefType>(t);
           return m && m.hasStaticShape() && m.getNumElements() > 0;
         });
}

bool isF32Product(linalg::LinalgOp op) {
  return llvm::all_of(op->getOperandTypes(),
                      [](Type t) { return getElementTypeOrSelf(t).isF32(); });
}

} // namespace tgc::cpu::matmuls

namespace {

/// Products of at most this many rows stream their weights (see
/// readTransposedOperandsInPlace); larger ones amortise packing them.
constexpr int64_t kMatrixVectorRows = 4;

/// How the passes that size tiles choose them: the model of the vector
/// unit, balanced for `threads`, unless the tiles are forced.
struct TileChoice {
  VectorUnit cpu;
  std::optional<MatmulTiles> forced;
  int64_t threads;

  MatmulTiles choose(int64_t m, int64_t n, int64_t k, int64_t batch) const {
    return forced ? *forced : chooseTiles(m, n, k, batch, cpu, threads);
  }
};

/// The tile choice the options describe; an error on `module` (named after
/// the pipeline) when they are not usable.
FailureOr<TileChoice> readTileChoice(ModuleOp module, unsigned vectorBits,
                                     unsigned vectorRegisters,
                                     int64_t l1CacheBytes, int64_t l2CacheBytes,
                                     ArrayRef<int64_t> tiles, int64_t threads) {
  if (vectorBits < 128 || vectorBits % 32 != 0 || vectorRegisters < 4)
    return module.emitError("tgc-vectorize-matmuls: unsupported vector unit (")
           << vectorBits << " bits, " << vectorRegisters << " registers)";
  TileChoice choice{
      {vectorBits / 32, vectorRegisters, l1CacheBytes, l2CacheBytes},
      std::nullopt,
      threads};
  if (!tiles.empty()) {
    std::string error;
    if (!(choice.forced = forcedTiles(tiles, choice.cpu, error)))
      return module.emitError("tgc-vectorize-matmuls: ") << error;
  }
  return choice;
}

LogicalResult runSchedule(ModuleOp module, ModuleOp schedule) {
  Operation *entry = nullptr;
  schedule->walk([&](transform::NamedSequenceOp seq) { entry = seq; });
  return transform::applyTransformNamedSequence(module, entry, schedule,
                                                transform::TransformOptions());
}

struct StreamFewRowProducts
    : tgc::cpu::impl::TGCCPUStreamFewRowProductsPassBase<StreamFewRowProducts> {
  void runOnOperation() override {
    readTransposedOperandsInPlace(getOperation(), kMatrixVectorRows);
  }
};

struct MarkTileFusions
    : tgc::cpu::impl::TGCCPUMarkTileFusionsPassBase<MarkTileFusions> {
  using Base::Base;
  void runOnOperation() override {
    // The same predicates as the fusion's, on the products as they are.
    ModuleOp module = getOperation();
    takeHeadsOperands(module);
    takeOutputTransposes(module);
    takeAccumulatorFills(module, amx, bf16Dot);
    takeEpilogues(module, amx);
  }
};

struct EmitBF16Products
    : tgc::cpu::impl::TGCCPUEmitBF16ProductsPassBase<EmitBF16Products> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<TileChoice> choice =
        readTileChoice(module, vectorBits, vectorRegisters, l1CacheBytes,
                       l2CacheBytes, *tiles, threads);
    if (failed(choice))
      return signalPassFailure();
    int64_t lanes = choice->cpu.lanes;
    bool dot = bf16Dot && lanes == 16;
    if (amx || dot)
      readNarrowTransposedOperands(module);
    if (amx)
      tgc::cpu::emitAMXProducts(module);
    else if (dot)
      tgc::cpu::emitDotBF16Products(
          module,
          [&](int64_t m, int64_t n, int64_t kPairs) {
            // A pair of bf16 takes the bytes of one f32: the f32 model
            // over K/2 sizes the tiles.
            MatmulTiles t = choice->choose(m, n, kPairs, 1);
            return tgc::cpu::DotTiles{t.mt, t.nt, t.kt, t.mr,
                                      roundUp(t.nr, lanes)};
          },
          fillTiles);
  }
};

struct WidenProductOperands
    : tgc::cpu::impl::TGCCPUWidenProductOperandsPassBase<WidenProductOperands> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The emitters took their products: the rest read f32.
    SmallVector<linalg::GenericOp> epilogues = collectEpilogues(module);
    prepareProductOperands(module, epilogues,
                           [](Operation *) { return false; });
    // The widened products are f32 ones now: their output tiles take their
    // fills too (a separate fill wrote the whole output to memory first).
    if (fillTiles)
      takeAccumulatorFills(module, amx, bf16Dot);
    padRhsRowStrides(module);
  }
};

struct TileProducts : tgc::cpu::impl::TGCCPUTileProductsPassBase<TileProducts> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<TileChoice> choice =
        readTileChoice(module, vectorBits, vectorRegisters, l1CacheBytes,
                       l2CacheBytes, *tiles, threads);
    if (failed(choice))
      return signalPassFailure();
    std::map<std::string, MatmulTiles> configs;
    module.walk([&](linalg::LinalgOp op) {
      if (!isScheduledProduct(op))
        return;
      bool batched = llvm::isa<linalg::BatchMatmulOp>(op);
      // Loop ranges (…, M, N, K) whatever the operands' layouts.
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      size_t r = ranges.size();
      int64_t batch = 1;
      for (size_t d = 0; d + 3 < r; ++d)
        batch *= ranges[d];
      MatmulTiles t =
          choice->choose(ranges[r - 3], ranges[r - 2], ranges[r - 1], batch);
      // Inside a parallel task (attention's per-head tasks): the task is
      // the thread's share, so its products are one output tile each.
      if (op->getParentOfType<scf::ForallOp>()) {
        t.mt = roundUp(ranges[r - 3], t.mr);
        t.nt = roundUp(ranges[r - 2], t.nr);
      }
      t.batched = batched;
      configs.emplace(t.key(), t);
      op->setAttr(kScheduleAttr, tilingAttr(&getContext(), t));
    });
    if (configs.empty())
      return;
    if (failed(runSchedule(module, *forallSchedule(&getContext(), configs))))
      return signalPassFailure();
    rankReduceUnitBatches(module);
  }
};

struct FuseIntoTiles
    : tgc::cpu::impl::TGCCPUFuseIntoTilesPassBase<FuseIntoTiles> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    writeOutputTilesTransposed(module);
    readHeadsOperandsInPlace(module);
    fillOutputTiles(module);
    fuseEpilogues(module);
  }
};

struct VectorizeProductTiles
    : tgc::cpu::impl::TGCCPUVectorizeProductTilesPassBase<
          VectorizeProductTiles> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The configurations tgc-cpu-tile-products gave the tiles.
    std::map<std::string, MatmulTiles> configs;
    module.walk([&](Operation *op) {
      if (auto attr = op->getAttrOfType<tg::MatmulTilingAttr>(kScheduleAttr)) {
        MatmulTiles t = tilesOf(attr);
        configs.emplace(t.key(), t);
      }
    });
    if (configs.empty())
      return;
    int64_t lanes = vectorBits / 32;
    if (failed(runSchedule(module,
                           *registerSchedule(&getContext(), configs, lanes))) ||
        failed(vectorizeTiles(module, lanes)) ||
        failed(runSchedule(module, *cleanupSchedule(&getContext()))))
      return signalPassFailure();
    hoistAccumulators(module);
    hoistTileAccumulators(module);
    if (failed(runSchedule(module, *loweringSchedule(&getContext()))))
      return signalPassFailure();
    module.walk([](Operation *op) { op->removeAttr(kScheduleAttr); });
  }
};

} // namespace

/// Options of a pass that sizes tiles, with the pipeline's vector unit.
template <typename PassOptions>
static PassOptions withVectorUnit(const VectorizeMatmulsOptions &options) {
  PassOptions pass;
  pass.vectorBits = options.vectorBits;
  pass.vectorRegisters = options.vectorRegisters;
  pass.l1CacheBytes = options.l1CacheBytes;
  pass.l2CacheBytes = options.l2CacheBytes;
  pass.tiles.assign(options.tiles.begin(), options.tiles.end());
  pass.threads = options.threads;
  return pass;
}

void tgc::cpu::buildVectorizeMatmulsPipeline(
    OpPassManager &pm, const VectorizeMatmulsOptions &options) {
  pm.addPass(std::make_unique<StreamFewRowProducts>());
  if (options.fillTiles) {
    TGCCPUMarkTileFusionsPassOptions mark;
    mark.amx = options.amx;
    mark.bf16Dot = options.bf16Dot;
    pm.addPass(std::make_unique<MarkTileFusions>(mark));
  }
  auto emit = withVectorUnit<TGCCPUEmitBF16ProductsPassOptions>(options);
  emit.amx = options.amx;
  emit.bf16Dot = options.bf16Dot;
  emit.fillTiles = options.fillTiles;
  pm.addPass(std::make_unique<EmitBF16Products>(emit));
  TGCCPUWidenProductOperandsPassOptions widen;
  widen.amx = options.amx;
  widen.bf16Dot = options.bf16Dot;
  widen.fillTiles = options.fillTiles;
  pm.addPass(std::make_unique<WidenProductOperands>(widen));
  pm.addPass(std::make_unique<TileProducts>(
      withVectorUnit<TGCCPUTileProductsPassOptions>(options)));
  pm.addPass(std::make_unique<FuseIntoTiles>());
  TGCCPUVectorizeProductTilesPassOptions vectorize;
  vectorize.vectorBits = options.vectorBits;
  pm.addPass(std::make_unique<VectorizeProductTiles>(vectorize));
}

bool tgc::cpu::readsHeadsInPlace(Operation *op) {
  auto product = llvm::dyn_cast<linalg::LinalgOp>(op);
  return product && isScheduledProduct(product) && isF32Product(product);
}

bool tgc::cpu::fusesIntoProductTiles(Operation *op, bool amx) {
  auto product = llvm::dyn_cast<linalg::LinalgOp>(op);
  if (!product || !isScheduledProduct(product))
    return false;
  if (isF32Product(product))
    return true;
  // Narrow operands widened to f32 (widenNarrowOperands) make an f32
  // product of it, tiled like one; vdpbf16ps products fill their registers
  // and leave each output tile to its epilogue (emitDotBF16Products). Not
  // the products on AMX tiles, whose tiles go through memory per K step.
  return getElementTypeOrSelf(product.getDpsInits()[0].getType()).isF32() &&
         !(amx && tgc::cpu::isAMXProduct(op));
}
