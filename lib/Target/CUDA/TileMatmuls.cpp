//===- TileMatmuls.cpp - matmuls as block programs over shared tiles ------===//
//
// tgc-gpu-tile-matmuls and tgc-gpu-lower-block-programs: see their
// descriptions in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CUDA/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace tgc::cuda {
#define GEN_PASS_DEF_TGCGPUTILEMATMULSPASS
#define GEN_PASS_DEF_TGCGPULOWERBLOCKPROGRAMSPASS
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
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !type.getElementType().isF32() ||
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
    if (threads <= 0 || threads > 1024 || threads % threadsX ||
        tileM <= 0 || tileN <= 0 || tileK <= 0 || tileM % threadsY ||
        tileN % threadsX || (tileM * tileK) % threads ||
        (tileK * tileN) % threads) {
      func.emitError("tgc-gpu-tile-matmuls: tiles must split evenly over "
                     "the threads (threads a multiple of 16 up to 1024; "
                     "tile-m a multiple of threads/16, tile-n of 16; "
                     "tile-m x tile-k and tile-k x tile-n multiples of "
                     "threads)");
      return signalPassFailure();
    }
    SmallVector<Contraction> contractions;
    func.walk([&](linalg::LinalgOp op) {
      if (std::optional<Contraction> c = matchContraction(op))
        contractions.push_back(*c);
    });
    for (Contraction &c : contractions) {
      int64_t gridX = ceilDiv(c.sizeN, tileN), gridY = ceilDiv(c.sizeM, tileM);
      // CUDA's grid limits on y and z.
      if (gridY > 65535 || c.sizeBatch > 65535 || c.sizeM == 0 ||
          c.sizeN == 0)
        continue;
      buildBlockProgram(c, gridX, gridY);
      c.op->erase();
    }
  }

  static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

  void buildBlockProgram(Contraction &c, int64_t gridX, int64_t gridY) {
    Location loc = c.op.getLoc();
    MLIRContext *context = c.op->getContext();
    OpBuilder b(c.op);
    // Index constants: the grid's bounds before it, the rest once at the
    // top of the block's body.
    auto outside = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    llvm::DenseMap<int64_t, Value> constants;
    Block *constantBlock = nullptr;
    auto cst = [&](OpBuilder &, int64_t v) -> Value {
      Value &constant = constants[v];
      if (!constant) {
        OpBuilder top = OpBuilder::atBlockBegin(constantBlock);
        constant = arith::ConstantIndexOp::create(top, loc, v);
      }
      return constant;
    };
    Type f32 = b.getF32Type();
    int64_t threadsY = threads / threadsX;
    int64_t rowsPerThread = tileM / threadsY, colsPerThread = tileN / threadsX;
    unsigned numLoops = c.op.getNumLoops();

    Value zeroIndex = outside(0), oneIndex = outside(1);
    auto grid = scf::ParallelOp::create(
        b, loc, ValueRange{zeroIndex, zeroIndex, zeroIndex},
        ValueRange{outside(gridX), outside(gridY), outside(c.sizeBatch)},
        ValueRange{oneIndex, oneIndex, oneIndex});
    grid->setAttr(kBlockProgramAttrName, UnitAttr::get(context));
    constantBlock = grid.getBody();
    b.setInsertionPoint(grid.getBody()->getTerminator());
    Value blockN = grid.getInductionVars()[0];
    Value blockM = grid.getInductionVars()[1];
    Value batchIndex = grid.getInductionVars()[2];
    Value m0 = arith::MulIOp::create(b, loc, blockM, cst(b, tileM));
    Value n0 = arith::MulIOp::create(b, loc, blockN, cst(b, tileN));
    auto blockBuffer = [&](ArrayRef<int64_t> shape, StringRef role) {
      auto buffer = memref::AllocaOp::create(b, loc, MemRefType::get(shape, f32));
      buffer->setAttr(role, UnitAttr::get(context));
      return buffer.getResult();
    };
    Value lhsTile = blockBuffer({tileK, tileM}, kSharedAttrName);
    Value rhsTile = blockBuffer({tileK, tileN}, kSharedAttrName);
    Value acc = blockBuffer({threads, rowsPerThread, colsPerThread},
                       kPerThreadAttrName);

    // Operand indices for the loop point (b, m, n, k).
    auto indices = [&](OpBuilder &builder, AffineMap map, Value m, Value n,
                       Value k) {
      SmallVector<Value> point(numLoops);
      point[c.m] = m;
      point[c.n] = n;
      point[c.k] = k;
      if (c.batch)
        point[*c.batch] = batchIndex;
      SmallVector<Value> result;
      for (AffineExpr e : map.getResults()) {
        Value v = point[cast<AffineDimExpr>(e).getPosition()];
        result.push_back(v ? v : cst(builder, 0));
      }
      return result;
    };
    // A loop over the block's threads: one phase.
    auto phase = [&](OpBuilder &builder,
                     function_ref<void(OpBuilder &, Value)> body) {
      auto loop = scf::ParallelOp::create(builder, loc, ValueRange{cst(builder, 0)},
                                          ValueRange{cst(builder, threads)},
                                          ValueRange{cst(builder, 1)});
      loop->setAttr(kPhaseAttrName, UnitAttr::get(context));
      OpBuilder inner = OpBuilder::atBlockTerminator(loop.getBody());
      body(inner, loop.getInductionVars()[0]);
    };
    // for (i = 0; i < n; ++i) body(i)
    auto forEach = [&](OpBuilder &builder, int64_t n,
                       function_ref<void(OpBuilder &, Value)> body) {
      auto loop = scf::ForOp::create(builder, loc, cst(builder, 0),
                                     cst(builder, n), cst(builder, 1));
      OpBuilder inner = OpBuilder::atBlockTerminator(loop.getBody());
      body(inner, loop.getInductionVar());
    };
    // The same, unrolled: a thread's accumulators are then indexed by
    // constants, and live in registers on the GPU.
    auto unrolled = [&](OpBuilder &builder, int64_t n,
                        function_ref<void(OpBuilder &, int64_t)> body) {
      for (int64_t i = 0; i < n; ++i)
        body(builder, i);
    };
    auto add = [&](OpBuilder &builder, Value x, Value y) -> Value {
      return arith::AddIOp::create(builder, loc, x, y);
    };
    auto mul = [&](OpBuilder &builder, Value x, int64_t y) -> Value {
      return arith::MulIOp::create(builder, loc, x, cst(builder, y));
    };
    auto less = [&](OpBuilder &builder, Value x, int64_t bound) -> Value {
      return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult, x,
                                   cst(builder, bound));
    };
    // The thread's coordinates in the block: (t / 16, t % 16).
    auto threadRow = [&](OpBuilder &builder, Value t) -> Value {
      return arith::DivUIOp::create(builder, loc, t, cst(builder, threadsX));
    };
    auto threadCol = [&](OpBuilder &builder, Value t) -> Value {
      return arith::RemUIOp::create(builder, loc, t, cst(builder, threadsX));
    };

    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    phase(b, [&](OpBuilder &pb, Value t) {
      unrolled(pb, rowsPerThread, [&](OpBuilder &ib, int64_t i) {
        unrolled(ib, colsPerThread, [&](OpBuilder &jb, int64_t j) {
          memref::StoreOp::create(jb, loc, zero, acc,
                                  ValueRange{t, cst(jb, i), cst(jb, j)});
        });
      });
    });

    auto kLoop = scf::ForOp::create(b, loc, cst(b, 0), cst(b, c.sizeK),
                                    cst(b, tileK));
    OpBuilder kb = OpBuilder::atBlockTerminator(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    // Copies a (rows x cols) tile of `operand` into `tile`, zero outside
    // the operand; `coords(r, c)` gives the operand's (m, n, k) point.
    auto copyTile = [&](OpBuilder &pb, Value t, Value operand, AffineMap map,
                        Value tile, int64_t cols, bool lhs) {
      int64_t perThread = tileK * (lhs ? tileM : tileN) / threads;
      forEach(pb, perThread, [&](OpBuilder &rb, Value r) {
        Value e = add(rb, t, mul(rb, r, threads));
        Value row = arith::DivUIOp::create(rb, loc, e, cst(rb, cols));
        Value col = arith::RemUIOp::create(rb, loc, e, cst(rb, cols));
        // lhs: row is m within the tile, col is k; rhs: row is k, col is n.
        Value m = lhs ? add(rb, m0, row) : Value();
        Value n = lhs ? Value() : add(rb, n0, col);
        Value k = add(rb, k0, lhs ? col : row);
        Value inside = arith::AndIOp::create(
            rb, loc, less(rb, k, c.sizeK),
            lhs ? less(rb, m, c.sizeM) : less(rb, n, c.sizeN));
        auto guarded = scf::IfOp::create(rb, loc, TypeRange{f32}, inside,
                                         /*withElseRegion=*/true);
        OpBuilder tb = guarded.getThenBodyBuilder();
        Value loaded = memref::LoadOp::create(
            tb, loc, operand, indices(tb, map, m, n, k));
        scf::YieldOp::create(tb, loc, loaded);
        OpBuilder eb = guarded.getElseBodyBuilder();
        scf::YieldOp::create(eb, loc, zero);
        // Tiles are stored k-major: [k][m] and [k][n].
        SmallVector<Value> at = lhs ? SmallVector<Value>{col, row}
                                    : SmallVector<Value>{row, col};
        memref::StoreOp::create(rb, loc, guarded.getResult(0), tile, at);
      });
    };
    phase(kb, [&](OpBuilder &pb, Value t) {
      copyTile(pb, t, c.lhs, c.lhsMap, lhsTile, tileK, /*lhs=*/true);
      copyTile(pb, t, c.rhs, c.rhsMap, rhsTile, tileN, /*lhs=*/false);
    });
    phase(kb, [&](OpBuilder &pb, Value t) {
      Value ty = threadRow(pb, t), tx = threadCol(pb, t);
      forEach(pb, tileK, [&](OpBuilder &kkb, Value kk) {
        unrolled(kkb, rowsPerThread, [&](OpBuilder &ib, int64_t i) {
          Value a = memref::LoadOp::create(
              ib, loc, lhsTile,
              ValueRange{kk, add(ib, ty, cst(ib, i * threadsY))});
          unrolled(ib, colsPerThread, [&](OpBuilder &jb, int64_t j) {
            Value bv = memref::LoadOp::create(
                jb, loc, rhsTile,
                ValueRange{kk, add(jb, tx, cst(jb, j * threadsX))});
            SmallVector<Value, 3> at{t, cst(jb, i), cst(jb, j)};
            Value sum = memref::LoadOp::create(jb, loc, acc, at);
            // a * b + sum as one fused multiply-add where the target has it.
            auto contract = arith::FastMathFlagsAttr::get(
                context, arith::FastMathFlags::contract);
            Value product = arith::MulFOp::create(jb, loc, a, bv, contract);
            memref::StoreOp::create(
                jb, loc, arith::AddFOp::create(jb, loc, sum, product, contract),
                acc, at);
          });
        });
      });
    });

    phase(b, [&](OpBuilder &pb, Value t) {
      Value ty = threadRow(pb, t), tx = threadCol(pb, t);
      unrolled(pb, rowsPerThread, [&](OpBuilder &ib, int64_t i) {
        Value m = add(ib, m0, add(ib, ty, cst(ib, i * threadsY)));
        unrolled(ib, colsPerThread, [&](OpBuilder &jb, int64_t j) {
          Value n = add(jb, n0, add(jb, tx, cst(jb, j * threadsX)));
          Value inside = arith::AndIOp::create(jb, loc, less(jb, m, c.sizeM),
                                               less(jb, n, c.sizeN));
          auto guarded = scf::IfOp::create(jb, loc, inside,
                                           /*withElseRegion=*/false);
          OpBuilder tb = guarded.getThenBodyBuilder();
          SmallVector<Value> at = indices(tb, c.outMap, m, n, Value());
          Value old = memref::LoadOp::create(tb, loc, c.out, at);
          Value sum = memref::LoadOp::create(
              tb, loc, acc, ValueRange{t, cst(tb, i), cst(tb, j)});
          memref::StoreOp::create(tb, loc, arith::AddFOp::create(tb, loc, old, sum),
                                  c.out, at);
        });
      });
    });
  }
};

struct TGCGPULowerBlockProgramsPass
    : tgc::cuda::impl::TGCGPULowerBlockProgramsPassBase<
          TGCGPULowerBlockProgramsPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> programs;
    getOperation().walk([&](scf::ParallelOp op) {
      if (op->hasAttr(kBlockProgramAttrName))
        programs.push_back(op);
    });
    for (scf::ParallelOp program : programs)
      if (failed(lower(program)))
        return signalPassFailure();
  }

  LogicalResult lower(scf::ParallelOp grid) {
    MLIRContext *context = grid.getContext();
    Location loc = grid.getLoc();
    Block *body = grid.getBody();
    SmallVector<scf::ParallelOp> phases;
    SmallVector<memref::AllocaOp> shared, perThread;
    for (Operation &op : *body) {
      if (auto alloca = dyn_cast<memref::AllocaOp>(op)) {
        if (alloca->hasAttr(kSharedAttrName))
          shared.push_back(alloca);
        else if (alloca->hasAttr(kPerThreadAttrName))
          perThread.push_back(alloca);
      }
    }
    grid.walk([&](scf::ParallelOp op) {
      if (op->hasAttr(kPhaseAttrName))
        phases.push_back(op);
    });
    std::optional<int64_t> threads;
    for (scf::ParallelOp p : phases) {
      std::optional<int64_t> n = getConstantIntValue(p.getUpperBound()[0]);
      if (p.getNumLoops() != 1 || !n ||
          !isConstantIntValue(p.getLowerBound()[0], 0) ||
          !isConstantIntValue(p.getStep()[0], 1) || (threads && *threads != *n))
        return p.emitError("tgc-gpu-lower-block-programs: phases must run "
                           "over the same threads 0..T");
      threads = n;
    }
    if (!threads || grid.getNumLoops() != 3)
      return grid.emitError("tgc-gpu-lower-block-programs: a block program "
                            "needs a 3-d grid and at least one phase");

    auto space = [&](gpu::AddressSpace s) {
      return gpu::AddressSpaceAttr::get(context, s);
    };
    SmallVector<Type> workgroupTypes, privateTypes;
    for (memref::AllocaOp a : shared)
      workgroupTypes.push_back(MemRefType::get(
          a.getType().getShape(), a.getType().getElementType(),
          MemRefLayoutAttrInterface(), space(gpu::AddressSpace::Workgroup)));
    for (memref::AllocaOp a : perThread)
      privateTypes.push_back(MemRefType::get(
          a.getType().getShape().drop_front(), a.getType().getElementType(),
          MemRefLayoutAttrInterface(), space(gpu::AddressSpace::Private)));

    IRRewriter rewriter(context);
    rewriter.setInsertionPoint(grid);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value blockSize = arith::ConstantIndexOp::create(rewriter, loc, *threads);
    auto launch = gpu::LaunchOp::create(
        rewriter, loc, grid.getUpperBound()[0], grid.getUpperBound()[1],
        grid.getUpperBound()[2], blockSize, one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{}, workgroupTypes, privateTypes);
    Block &launchBody = launch.getBody().front();
    rewriter.setInsertionPointToEnd(&launchBody);
    auto terminator = gpu::TerminatorOp::create(rewriter, loc);

    // The grid's body, run by every thread of every block.
    rewriter.eraseOp(body->getTerminator());
    gpu::KernelDim3 blockIds = launch.getBlockIds();
    rewriter.inlineBlockBefore(body, terminator,
                               ValueRange{blockIds.x, blockIds.y, blockIds.z});
    for (auto [alloca, attribution] :
         llvm::zip(shared, launch.getWorkgroupAttributions())) {
      rewriter.replaceAllUsesWith(alloca.getResult(), attribution);
      rewriter.eraseOp(alloca);
    }
    // Per-thread buffers lose their thread index.
    for (auto [alloca, attribution] :
         llvm::zip(perThread, launch.getPrivateAttributions())) {
      for (Operation *user : llvm::make_early_inc_range(alloca->getUsers())) {
        rewriter.setInsertionPoint(user);
        if (auto load = dyn_cast<memref::LoadOp>(user)) {
          rewriter.replaceOpWithNewOp<memref::LoadOp>(
              load, attribution, load.getIndices().drop_front());
        } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
          rewriter.replaceOpWithNewOp<memref::StoreOp>(
              store, store.getValue(), attribution,
              store.getIndices().drop_front());
        } else {
          return user->emitError("tgc-gpu-lower-block-programs: a "
                                 "per-thread buffer used other than by "
                                 "loads and stores");
        }
      }
      rewriter.eraseOp(alloca);
    }
    // Each phase: this thread's iteration, then a barrier.
    Value thread = launch.getThreadIds().x;
    for (scf::ParallelOp p : phases) {
      Block *phaseBody = p.getBody();
      rewriter.eraseOp(phaseBody->getTerminator());
      rewriter.inlineBlockBefore(phaseBody, p, ValueRange{thread});
      rewriter.setInsertionPoint(p);
      gpu::BarrierOp::create(rewriter, loc);
      rewriter.eraseOp(p);
    }
    rewriter.eraseOp(grid);
    return success();
  }
};

} // namespace
