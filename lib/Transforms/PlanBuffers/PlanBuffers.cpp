//===- PlanBuffers.cpp - one static arena for the step's buffers ----------===//
//
// The bufferized counterpart of the tg memory planner (MemoryPlan.h): live
// ranges over the entry block and greedy-by-size offsets; the planned allocs
// then lower to a malloc-like arena allocator. See the pass descriptions.
//
//===----------------------------------------------------------------------===//

#include "tgc/Conversion/LoopBodies.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCPLANBUFFERSPASS
#define GEN_PASS_DEF_TGCLOWERARENAALLOCSPASS
#include "tgc/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {

struct PlannedAlloc {
  memref::AllocOp alloc;
  tg::ArenaBlock block;
};

/// Positions in one flattened schedule: the function's top-level ops in
/// order, each scf.for followed by the ops of its body, at any depth (the
/// fused loss's loop over chunks, attention's loops over query and key
/// tiles). A loop spans [its position, its body's last position].
struct Schedule {
  llvm::DenseMap<Operation *, int64_t> start, end;

  explicit Schedule(Block &body) {
    int64_t index = 0;
    visit(body, index);
  }

private:
  void visit(Block &block, int64_t &index) {
    for (Operation &op : block) {
      start[&op] = index++;
      if (auto loop = llvm::dyn_cast<scf::ForOp>(op))
        visit(*loop.getBody(), index);
      end[&op] = index - 1;
    }
  }
};

/// The last position (in `block`, a function body or a top-level loop's
/// body) that reads or writes `alloc` or a value derived from it; nullopt
/// when it escapes the block (returned, or yielded to the next iteration).
std::optional<int64_t> lastUse(memref::AllocOp alloc, Block &block,
                               const Schedule &schedule) {
  int64_t last = schedule.start.lookup(alloc);
  SmallVector<Value> worklist{alloc.getResult()};
  llvm::DenseSet<Value> seen{alloc.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      Operation *top = block.findAncestorOpInBlock(*user);
      if (!top || top->hasTrait<OpTrait::IsTerminator>())
        return std::nullopt;
      last = std::max(last, schedule.end.lookup(top));
      // Views, casts and whatever a region yields alias the buffer. Its
      // address (taken for a runtime call, e.g. a collective that writes
      // the buffer until its wait) is a use wherever it goes.
      bool address = isa<memref::ExtractAlignedPointerAsIndexOp>(user) ||
                     (!llvm::isa<BaseMemRefType>(value.getType()) &&
                      isa<arith::ArithDialect>(user->getDialect()));
      for (Value result : address ? user->getResults() : top->getResults())
        if ((address || llvm::isa<BaseMemRefType>(result.getType())) &&
            seen.insert(result).second)
          worklist.push_back(result);
    }
  }
  return last;
}

bool isPlannable(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  return type.hasStaticShape() && type.getLayout().isIdentity() &&
         !type.getMemorySpace() && alloc.getSymbolOperands().empty();
}

struct TGCPlanBuffersPass
    : tg::impl::TGCPlanBuffersPassBase<TGCPlanBuffersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t total = 0;
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (!func.isExternal())
        total = std::max(total, plan(func));
    module->setAttr(
        tg::kArenaBytesAttrName,
        IntegerAttr::get(IntegerType::get(&getContext(), 64), total));
  }

  int64_t plan(func::FuncOp func) {
    Block &body = func.getBody().front();
    Schedule schedule(body);

    // The function's allocs, and those of its loops' bodies at any depth
    // (each iteration's buffers die before the next iteration's are
    // allocated, so one place serves them all).
    std::vector<PlannedAlloc> allocs;
    auto collect = [&](Block &block) {
      for (auto alloc : block.getOps<memref::AllocOp>()) {
        if (!isPlannable(alloc))
          continue;
        std::optional<int64_t> end = lastUse(alloc, block, schedule);
        if (!end)
          continue;
        PlannedAlloc planned{alloc, {}};
        planned.block.bytes = tg::getValueBytes(alloc.getResult());
        planned.block.start = schedule.start.lookup(alloc);
        planned.block.end = *end;
        allocs.push_back(planned);
      }
    };
    SmallVector<Block *> bodies;
    tgc::collectLoopBodies(body, [](scf::ForOp) { return true; }, bodies);
    for (Block *block : bodies)
      collect(*block);
    if (allocs.empty())
      return 0;

    std::vector<tg::ArenaBlock> blocks;
    for (const PlannedAlloc &a : allocs)
      blocks.push_back(a.block);
    int64_t arenaBytes = tg::assignArenaOffsets(blocks, /*alignment=*/64);

    OpBuilder b(func);
    for (auto [planned, block] : llvm::zip(allocs, blocks))
      planned.alloc->setAttr(tg::kArenaOffsetAttrName,
                             b.getI64IntegerAttr(block.offset));
    func->setAttr(tg::kArenaBytesAttrName, b.getI64IntegerAttr(arenaBytes));
    return arenaBytes;
  }
};

//===----------------------------------------------------------------------===//
// Lowering the plan
//===----------------------------------------------------------------------===//

constexpr llvm::StringLiteral kArenaAllocFn = "tgc_arena_alloc";
constexpr llvm::StringLiteral kArenaReleaseFn = "tgc_arena_release";

struct ArenaAllocLowering : ConvertOpToLLVMPattern<memref::AllocOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(memref::AllocOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto offset = op->getAttrOfType<IntegerAttr>(tg::kArenaOffsetAttrName);
    if (!offset)
      return failure();
    Location loc = op.getLoc();
    Value bytes = LLVM::ConstantOp::create(rewriter, loc, rewriter.getI64Type(),
                                           offset.getInt());
    auto call = LLVM::CallOp::create(
        rewriter, loc, LLVM::LLVMPointerType::get(rewriter.getContext()),
        kArenaAllocFn, ValueRange{bytes});
    Value descriptor = MemRefDescriptor::fromStaticShape(
        rewriter, loc, *getTypeConverter(), op.getType(), call.getResult());
    rewriter.replaceOp(op, descriptor);
    return success();
  }
};

struct ArenaReleaseLowering : ConvertOpToLLVMPattern<memref::DeallocOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(memref::DeallocOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!llvm::isa<MemRefType>(op.getMemref().getType()))
      return failure();
    MemRefDescriptor descriptor(adaptor.getMemref());
    Value pointer = descriptor.allocatedPtr(rewriter, op.getLoc());
    LLVM::CallOp::create(rewriter, op.getLoc(), TypeRange(), kArenaReleaseFn,
                         ValueRange{pointer});
    rewriter.eraseOp(op);
    return success();
  }
};

struct TGCLowerArenaAllocsPass
    : tg::impl::TGCLowerArenaAllocsPassBase<TGCLowerArenaAllocsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    auto arena = module->getAttrOfType<IntegerAttr>(tg::kArenaBytesAttrName);
    bool planned = false;
    module.walk([&](memref::AllocOp op) {
      planned |= op->hasAttr(tg::kArenaOffsetAttrName);
    });
    if (!planned)
      return;
    declareRuntime(module, arena ? arena.getInt() : 0);

    LLVMTypeConverter converter(context);
    RewritePatternSet patterns(context);
    patterns.add<ArenaAllocLowering, ArenaReleaseLowering>(converter);
    ConversionTarget target(*context);
    target.addLegalDialect<LLVM::LLVMDialect>();
    target.addLegalOp<UnrealizedConversionCastOp>();
    target.addDynamicallyLegalOp<memref::AllocOp>([](memref::AllocOp op) {
      return !op->hasAttr(tg::kArenaOffsetAttrName);
    });
    target.addDynamicallyLegalOp<memref::DeallocOp>([](memref::DeallocOp op) {
      return !llvm::isa<MemRefType>(op.getMemref().getType());
    });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // An unranked dealloc would reach free() with an arena pointer.
    WalkResult unranked = module.walk([&](memref::DeallocOp op) {
      op.emitError("tgc-lower-arena-allocs: cannot release an unranked buffer");
      return WalkResult::interrupt();
    });
    if (unranked.wasInterrupted())
      signalPassFailure();
  }

  /// `malloc`/`free`-like declarations and the arena's size.
  void declareRuntime(ModuleOp module, int64_t arenaBytes) {
    MLIRContext *context = module.getContext();
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    Location loc = module.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(context);
    auto none = LLVM::ModRefInfo::NoModRef, rw = LLVM::ModRefInfo::ModRef;
    if (!module.lookupSymbol(kArenaAllocFn)) {
      auto alloc = LLVM::LLVMFuncOp::create(
          b, loc, kArenaAllocFn,
          LLVM::LLVMFunctionType::get(ptr, {b.getI64Type()}));
      alloc.setResAttrsAttr(b.getArrayAttr(b.getDictionaryAttr(b.getNamedAttr(
          LLVM::LLVMDialect::getNoAliasAttrName(), b.getUnitAttr()))));
      alloc.setMemoryEffectsAttr(LLVM::MemoryEffectsAttr::get(
          context, {none, none, rw, none, none, none}));
      alloc.setNoUnwind(true);
      alloc.setWillReturn(true);
    }
    if (!module.lookupSymbol(kArenaReleaseFn)) {
      auto release = LLVM::LLVMFuncOp::create(
          b, loc, kArenaReleaseFn,
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context), {ptr}));
      release.setMemoryEffectsAttr(LLVM::MemoryEffectsAttr::get(
          context, {none, rw, rw, none, none, none}));
      release.setNoUnwind(true);
      release.setWillReturn(true);
    }
    if (!module.lookupSymbol("tgc_arena_bytes"))
      LLVM::GlobalOp::create(b, loc, b.getI64Type(), /*isConstant=*/true,
                             LLVM::Linkage::External, "tgc_arena_bytes",
                             b.getI64IntegerAttr(arenaBytes));
  }
};

} // namespace
