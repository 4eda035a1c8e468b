//===- TileMatmuls.cpp - matmuls as block programs over shared tiles ------===//
//
// tgc-gpu-tile-matmuls: see its description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "BlockProgram.h"
#include "WarpMMA.h"
#include "tgc/Target/CUDA/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace tgc::cuda {
#define GEN_PASS_DEF_TGCGPUTILEMATMULSPASS
#include "tgc/Target/CUDA/Passes.h.inc"
} // namespace tgc::cuda

using namespace mlir;
using namespace tgc::cuda;

namespace {

/// A contraction the block program handles: C[b, m, n] += A[b, m, k] *
/// B[b, k, n], each operand indexed by a projection of (b, m, n, k).
struct Contraction {
  linalg::LinalgOp op;
  Value lhs, rhs, out;
  AffineMap lhsMap, rhsMap, outMap;
  unsigned m, n, k;
  std::optional<unsigned> batch;
  int64_t sizeM, sizeN, sizeK, sizeBatch = 1;
};

std::optional<Contraction> matchContraction(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1 || dims->batch.size() > 1)
    return std::nullopt;
  // f32 operands, or bf16/f16 ones (mixed precision: both of one type)
  // accumulated in f32; an f32 output.
  Type operandElement = getElementTypeOrSelf(op.getDpsInputs()[0].getType());
  if (!operandElement.isF32() && !operandElement.isBF16() &&
      !operandElement.isF16())
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    Type expected = op.isDpsInit(&operand)
                        ? Type(Float32Type::get(op->getContext()))
                        : operandElement;
    if (!type || type.getElementType() != expected ||
        !op.getMatchingIndexingMap(&operand).isProjectedPermutation())
      return std::nullopt;
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  Contraction c;
  c.op = op;
  c.m = dims->m[0];
  c.n = dims->n[0];
  c.k = dims->k[0];
  if (!dims->batch.empty())
    c.batch = dims->batch[0];
  c.sizeM = ranges[c.m];
  c.sizeN = ranges[c.n];
  c.sizeK = ranges[c.k];
  if (c.batch)
    c.sizeBatch = ranges[*c.batch];
  OpOperand *first = op.getDpsInputOperand(0);
  OpOperand *second = op.getDpsInputOperand(1);
  // The left operand is the one indexed by M.
  if (!op.getMatchingIndexingMap(first).isFunctionOfDim(c.m))
    std::swap(first, second);
  c.lhs = first->get();
  c.rhs = second->get();
  c.lhsMap = op.getMatchingIndexingMap(first);
  c.rhsMap = op.getMatchingIndexingMap(second);
  OpOperand *init = op.getDpsInitOperand(0);
  c.out = init->get();
  c.outMap = op.getMatchingIndexingMap(init);
  return c;
}

struct TGCGPUTileMatmulsPass
    : tgc::cuda::impl::TGCGPUTileMatmulsPassBase<TGCGPUTileMatmulsPass> {
  using Base::Base;

  /// Threads are laid out threadsX (fastest, along N) by threadsY.
  static constexpr int64_t threadsX = 16;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t threadsY = threads / threadsX;
    if (threads <= 0 || threads > 1024 || threads % threadsX || tileM <= 0 ||
        tileN <= 0 || tileK <= 0 || tileM % threadsY || tileN % threadsX ||
        (tileM * tileK) % threads || (tileK * tileN) % threads) {
      func.emitError("tgc-gpu-tile-matmuls: tiles must split evenly over "
                     "the threads (threads a multiple of 16 up to 1024; "
                     "tile-m a multiple of threads/16, tile-n of 16; "
                     "tile-m x tile-k and tile-k x tile-n multiples of "
                     "threads)");
      return signalPassFailure();
    }
    if (mma == MMAKind::NVVM)
      mmaKind = WarpMMAKind::NVVM;
    else if (mma == MMAKind::Emulated)
      mmaKind = WarpMMAKind::Emulated;
    SmallVector<Contraction> contractions;
    func.walk([&](linalg::LinalgOp op) {
      if (std::optional<Contraction> c = matchContraction(op))
        contractions.push_back(*c);
    });
    for (Contraction &c : contractions) {
      int64_t gridX = ceilDiv(c.sizeN, tileN), gridY = ceilDiv(c.sizeM, tileM);
      // CUDA's grid limits on y and z.
      if (gridY > 65535 || c.sizeBatch > 65535 || c.sizeM == 0 || c.sizeN == 0)
        continue;
      buildBlockProgram(c, gridX, gridY);
      c.op->erase();
    }
  }

  static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

  std::optional<WarpMMAKind> mmaKind;

  /// The warps' share of a tile for mma.m16n8k16: warpsM warps down the
  /// 16-row slices, warpsN across, each with `subtiles` 16 x 8 outputs.
  struct WarpTiling {
    int64_t warpsN, subtiles;
  };
  std::optional<WarpTiling> warpTiling() const {
    int64_t warps = threads / 32, warpsM = tileM / 16;
    if (threads % 32 || tileM % 16 || tileK % 16 || warps % warpsM)
      return std::nullopt;
    int64_t warpsN = warps / warpsM;
    if (tileN % (8 * warpsN))
      return std::nullopt;
    return WarpTiling{warpsN, tileN / (8 * warpsN)};
  }

  /// The first row and column of thread t's warp in the tile.
  std::pair<Value, Value> warpOrigin(BlockProgramBuilder &program, OpBuilder &b,
                                     Value t, const WarpTiling &tiling) const {
    Location loc = program.getLoc();
    Value warp = arith::DivUIOp::create(b, loc, t, program.index(32));
    Value warpM =
        arith::DivUIOp::create(b, loc, warp, program.index(tiling.warpsN));
    Value warpN =
        arith::RemUIOp::create(b, loc, warp, program.index(tiling.warpsN));
    return {program.mul(b, warpM, 16),
            program.mul(b, warpN, 8 * tiling.subtiles)};
  }

  /// For each 16-deep slice of a K tile: every warp loads its A fragment
  /// and one B fragment per subtile from the shared tiles (stored [k][m]
  /// and [k][n]) into `fragA` and `fragB`, and multiplies them into its C
  /// fragments in `acc`. The
  /// emulated multiply reads other lanes' fragments, so it is a phase of
  /// its own.
  void buildWarpProducts(BlockProgramBuilder &program, OpBuilder &kb,
                         const WarpTiling &tiling, Type element, Value lhsTile,
                         Value rhsTile, Value fragA, Value fragB, Value acc) {
    Location loc = program.getLoc();
    auto cst = [&](int64_t v) { return program.index(v); };
    WarpMMABuilder mmaBuilder(program, element, *mmaKind);
    auto multiply = [&](OpBuilder &pb, Value t,
                        const WarpMMABuilder::Lane &lane) {
      for (int64_t j = 0; j < tiling.subtiles; ++j)
        mmaBuilder.multiplyAdd(pb, t, lane, fragA, fragB, j, acc, j);
    };
    for (int64_t k0 = 0; k0 < tileK; k0 += 16) {
      program.phase(kb, [&](OpBuilder &pb, Value t) {
        WarpMMABuilder::Lane lane = mmaBuilder.lane(pb, t);
        auto [warpRow, warpCol] = warpOrigin(program, pb, t, tiling);
        Value laneK = program.add(pb, program.mul(pb, lane.q, 2), cst(k0));
        for (int64_t i = 0; i < 8; ++i) {
          FragmentOffset offset = fragmentOffsetA(i);
          Value m = program.add(pb, warpRow,
                                program.add(pb, lane.g, cst(offset.row)));
          Value k = program.add(pb, laneK, cst(offset.col));
          Value v = memref::LoadOp::create(pb, loc, lhsTile, ValueRange{k, m});
          memref::StoreOp::create(pb, loc, v, fragA, ValueRange{t, cst(i)});
        }
        for (int64_t j = 0; j < tiling.subtiles; ++j) {
          Value n =
              program.add(pb, warpCol, program.add(pb, lane.g, cst(8 * j)));
          for (int64_t i = 0; i < 4; ++i) {
            Value k = program.add(pb, laneK, cst(fragmentOffsetB(i).row));
            Value v =
                memref::LoadOp::create(pb, loc, rhsTile, ValueRange{k, n});
            memref::StoreOp::create(pb, loc, v, fragB,
                                    ValueRange{t, cst(j), cst(i)});
          }
        }
        if (mmaBuilder.getKind() == WarpMMAKind::NVVM)
          multiply(pb, t, lane);
      });
      if (mmaBuilder.getKind() == WarpMMAKind::Emulated)
        program.phase(kb, [&](OpBuilder &pb, Value t) {
          multiply(pb, t, mmaBuilder.lane(pb, t));
        });
    }
  }

  void buildBlockProgram(Contraction &c, int64_t gridX, int64_t gridY) {
    BlockProgramBuilder program(c.op, {gridX, gridY, c.sizeBatch}, threads);
    Location loc = program.getLoc();
    MLIRContext *context = c.op->getContext();
    OpBuilder &b = program.body();
    auto cst = [&](int64_t v) { return program.index(v); };
    auto add = [&](OpBuilder &builder, Value x, Value y) {
      return program.add(builder, x, y);
    };
    auto mul = [&](OpBuilder &builder, Value x, int64_t y) {
      return program.mul(builder, x, y);
    };
    auto less = [&](OpBuilder &builder, Value x, int64_t bound) {
      return program.less(builder, x, bound);
    };
    int64_t threadsY = threads / threadsX;
    int64_t rowsPerThread = tileM / threadsY, colsPerThread = tileN / threadsX;
    unsigned numLoops = c.op.getNumLoops();
    Value batchIndex = program.blockId(2);
    Value m0 = mul(b, program.blockId(1), tileM);
    Value n0 = mul(b, program.blockId(0), tileN);
    // The tiles keep the operands' type (bf16/f16 halve the loads and the
    // shared memory); the products are widened to f32 where they are used.
    Type element = getElementTypeOrSelf(c.lhs.getType());
    Value lhsTile = program.shared({tileK, tileM}, element);
    Value rhsTile = program.shared({tileK, tileN}, element);
    // Tensor cores for bf16/f16 operands where the tiles split into warps.
    std::optional<WarpTiling> warps;
    if (mmaKind && !element.isF32())
      warps = warpTiling();
    // A thread's accumulators: its rows x columns of the tile, or with
    // tensor cores its C fragments, 4 for each 16 x 8 subtile.
    int64_t accRows = warps ? warps->subtiles : rowsPerThread;
    int64_t accCols = warps ? 4 : colsPerThread;
    Value acc = program.perThread({accRows, accCols});
    // With tensor cores, each thread's A and B fragments.
    Value fragA, fragB;
    if (warps) {
      WarpMMABuilder mmaBuilder(program, element, *mmaKind);
      fragA = mmaBuilder.fragmentsA();
      fragB = mmaBuilder.fragmentsB(warps->subtiles);
    }
    Value zero = program.f32(0);
    Value zeroElement =
        element.isF32()
            ? zero
            : arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0))
                  .getResult();
    auto widened = [&](OpBuilder &builder, Value v) -> Value {
      if (element.isF32())
        return v;
      return arith::ExtFOp::create(builder, loc, builder.getF32Type(), v);
    };

    // Operand indices for the loop point (b, m, n, k).
    auto indices = [&](AffineMap map, Value m, Value n, Value k) {
      SmallVector<Value> point(numLoops);
      point[c.m] = m;
      point[c.n] = n;
      point[c.k] = k;
      if (c.batch)
        point[*c.batch] = batchIndex;
      SmallVector<Value> result;
      for (AffineExpr e : map.getResults()) {
        Value v = point[cast<AffineDimExpr>(e).getPosition()];
        result.push_back(v ? v : cst(0));
      }
      return result;
    };
    // Unrolled loops: a thread's accumulators are then indexed by
    // constants, and live in registers on the GPU.
    auto unrolled = [&](OpBuilder &builder, int64_t n,
                        function_ref<void(OpBuilder &, int64_t)> body) {
      for (int64_t i = 0; i < n; ++i)
        body(builder, i);
    };
    // The thread's coordinates in the block: (t / 16, t % 16).
    auto threadRow = [&](OpBuilder &builder, Value t) -> Value {
      return arith::DivUIOp::create(builder, loc, t, cst(threadsX));
    };
    auto threadCol = [&](OpBuilder &builder, Value t) -> Value {
      return arith::RemUIOp::create(builder, loc, t, cst(threadsX));
    };

    program.phase(b, [&](OpBuilder &pb, Value t) {
      unrolled(pb, accRows, [&](OpBuilder &ib, int64_t i) {
        unrolled(ib, accCols, [&](OpBuilder &jb, int64_t j) {
          memref::StoreOp::create(jb, loc, zero, acc,
                                  ValueRange{t, cst(i), cst(j)});
        });
      });
    });

    auto kLoop = scf::ForOp::create(b, loc, cst(0), cst(c.sizeK), cst(tileK));
    OpBuilder kb = OpBuilder::atBlockTerminator(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    // Copies the operand's tile into `tile` (stored k-major: [k][m] for the
    // left operand, [k][n] for the right), zero outside the operand.
    auto copyTile = [&](OpBuilder &pb, Value t, Value operand, AffineMap map,
                        Value tile, bool lhs) {
      int64_t cols = lhs ? tileK : tileN;
      int64_t perThread = tileK * (lhs ? tileM : tileN) / threads;
      program.forEach(pb, perThread, [&](OpBuilder &rb, Value r) {
        Value e = add(rb, t, mul(rb, r, threads));
        Value row = arith::DivUIOp::create(rb, loc, e, cst(cols));
        Value col = arith::RemUIOp::create(rb, loc, e, cst(cols));
        // lhs: row is m within the tile, col is k; rhs: row is k, col is n.
        Value m = lhs ? add(rb, m0, row) : Value();
        Value n = lhs ? Value() : add(rb, n0, col);
        Value k = add(rb, k0, lhs ? col : row);
        Value inside = arith::AndIOp::create(rb, loc, less(rb, k, c.sizeK),
                                             lhs ? less(rb, m, c.sizeM)
                                                 : less(rb, n, c.sizeN));
        auto guarded = scf::IfOp::create(rb, loc, TypeRange{element}, inside,
                                         /*withElseRegion=*/true);
        OpBuilder tb = guarded.getThenBodyBuilder();
        Value loaded =
            memref::LoadOp::create(tb, loc, operand, indices(map, m, n, k));
        scf::YieldOp::create(tb, loc, loaded);
        OpBuilder eb = guarded.getElseBodyBuilder();
        scf::YieldOp::create(eb, loc, zeroElement);
        SmallVector<Value> at =
            lhs ? SmallVector<Value>{col, row} : SmallVector<Value>{row, col};
        memref::StoreOp::create(rb, loc, guarded.getResult(0), tile, at);
      });
    };
    program.phase(kb, [&](OpBuilder &pb, Value t) {
      copyTile(pb, t, c.lhs, c.lhsMap, lhsTile, /*lhs=*/true);
      copyTile(pb, t, c.rhs, c.rhsMap, rhsTile, /*lhs=*/false);
    });
    if (warps)
      buildWarpProducts(program, kb, *warps, element, lhsTile, rhsTile, fragA,
                        fragB, acc);
    else
      program.phase(kb, [&](OpBuilder &pb, Value t) {
        Value ty = threadRow(pb, t), tx = threadCol(pb, t);
        program.forEach(pb, tileK, [&](OpBuilder &kkb, Value kk) {
          unrolled(kkb, rowsPerThread, [&](OpBuilder &ib, int64_t i) {
            Value a = widened(
                ib, memref::LoadOp::create(
                        ib, loc, lhsTile,
                        ValueRange{kk, add(ib, ty, cst(i * threadsY))}));
            unrolled(ib, colsPerThread, [&](OpBuilder &jb, int64_t j) {
              Value bv = widened(
                  jb, memref::LoadOp::create(
                          jb, loc, rhsTile,
                          ValueRange{kk, add(jb, tx, cst(j * threadsX))}));
              SmallVector<Value, 3> at{t, cst(i), cst(j)};
              Value sum = memref::LoadOp::create(jb, loc, acc, at);
              // a * b + sum as one fused multiply-add where the target has it.
              auto contract = arith::FastMathFlagsAttr::get(
                  context, arith::FastMathFlags::contract);
              Value product = arith::MulFOp::create(jb, loc, a, bv, contract);
              memref::StoreOp::create(
                  jb, loc,
                  arith::AddFOp::create(jb, loc, sum, product, contract), acc,
                  at);
            });
          });
        });
      });

    // Where accumulator (i, j) of thread t goes in the tile.
    auto tilePosition = [&](OpBuilder &builder, Value t, int64_t i,
                            int64_t j) -> std::pair<Value, Value> {
      if (!warps)
        return {add(builder, threadRow(builder, t), cst(i * threadsY)),
                add(builder, threadCol(builder, t), cst(j * threadsX))};
      WarpMMABuilder mmaBuilder(program, element, *mmaKind);
      WarpMMABuilder::Lane lane = mmaBuilder.lane(builder, t);
      auto [warpRow, warpCol] = warpOrigin(program, builder, t, *warps);
      FragmentOffset offset = fragmentOffsetC(j);
      return {
          add(builder, warpRow, add(builder, lane.g, cst(offset.row))),
          add(builder, warpCol,
              add(builder, mul(builder, lane.q, 2), cst(i * 8 + offset.col)))};
    };
    program.phase(b, [&](OpBuilder &pb, Value t) {
      unrolled(pb, accRows, [&](OpBuilder &ib, int64_t i) {
        unrolled(ib, accCols, [&](OpBuilder &jb, int64_t j) {
          auto [row, col] = tilePosition(jb, t, i, j);
          Value m = add(jb, m0, row), n = add(jb, n0, col);
          Value inside = arith::AndIOp::create(jb, loc, less(jb, m, c.sizeM),
                                               less(jb, n, c.sizeN));
          auto guarded = scf::IfOp::create(jb, loc, inside,
                                           /*withElseRegion=*/false);
          OpBuilder tb = guarded.getThenBodyBuilder();
          SmallVector<Value> at = indices(c.outMap, m, n, Value());
          Value old = memref::LoadOp::create(tb, loc, c.out, at);
          Value sum = memref::LoadOp::create(tb, loc, acc,
                                             ValueRange{t, cst(i), cst(j)});
          memref::StoreOp::create(
              tb, loc, arith::AddFOp::create(tb, loc, old, sum), c.out, at);
        });
      });
    });
  }
};

} // namespace
