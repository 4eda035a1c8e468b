//===- Collectives.cpp - tg collectives bufferize into runtime calls ------===//
//
// tg.all_reduce_start and tg.all_reduce_wait are not lowered to linalg: they
// stay on tensors until One-Shot Bufferize, whose analysis keeps every other
// read and write of the gradient's buffer out from between them, and then
// become calls of the runtime (lib/Runtime/Distributed.h):
//
//   %request = call @tgc_allreduce_start(%address, %count, %weight)
//                : (i64, i64, f32) -> i64
//   call @tgc_allreduce_wait(%request) : (i64) -> ()
//
//===----------------------------------------------------------------------===//

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::tg;

namespace {

/// The runtime function `name` of `type`, declared once per module.
func::FuncOp declareRuntimeFunction(Operation *from, StringRef name,
                                    FunctionType type) {
  auto module = from->getParentOfType<ModuleOp>();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b(module.getBodyRegion());
  auto func = func::FuncOp::create(b, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

/// The address of `buffer`'s first element as i64, for a runtime function
/// that takes a pointer and a count (tgc's CPU code calls with bare
/// pointers, which cannot carry dynamically shaped memrefs).
FailureOr<Value> addressOf(RewriterBase &rewriter, Location loc, Operation *op,
                           Value buffer) {
  auto type = llvm::cast<MemRefType>(buffer.getType());
  if (!type.getElementType().isF32() || !type.hasStaticShape() ||
      !type.areTrailingDimsContiguous(type.getRank()))
    return op->emitError("tg.all_reduce_start: needs a contiguous f32 "
                         "buffer of static shape, got ")
           << type;
  auto metadata =
      memref::ExtractStridedMetadataOp::create(rewriter, loc, buffer);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      rewriter, loc, metadata.getBaseBuffer());
  Value bytes =
      arith::MulIOp::create(rewriter, loc, metadata.getOffset(),
                            arith::ConstantIndexOp::create(rewriter, loc, 4));
  Value address = arith::AddIOp::create(rewriter, loc, base, bytes);
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                    address)
      .getResult();
}

struct AllReduceStartModel
    : BufferizableOpInterface::ExternalModel<AllReduceStartModel,
                                             AllReduceStartOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &) const {
    return operand.getOperandNumber() == 0; // the sum replaces the input
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (operand.getOperandNumber() != 0)
      return {};
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto start = llvm::cast<AllReduceStartOp>(op);
    Location loc = op->getLoc();
    FailureOr<Value> buffer =
        getBuffer(rewriter, start.getInput(), options, state);
    FailureOr<Value> weightBuffer =
        getBuffer(rewriter, start.getWeight(), options, state);
    if (failed(buffer) || failed(weightBuffer))
      return failure();
    auto i64 = rewriter.getI64Type();
    func::FuncOp callee = declareRuntimeFunction(
        op, "tgc_allreduce_start",
        rewriter.getFunctionType({i64, i64, rewriter.getF32Type()}, {i64}));
    FailureOr<Value> address = addressOf(rewriter, loc, op, *buffer);
    if (failed(address))
      return failure();
    Value count = arith::ConstantIntOp::create(
        rewriter, loc, i64,
        llvm::cast<MemRefType>(buffer->getType()).getNumElements());
    Value weight = memref::LoadOp::create(rewriter, loc, *weightBuffer);
    auto call = func::CallOp::create(rewriter, loc, callee,
                                     ValueRange{*address, count, weight});
    replaceOpWithBufferizedValues(rewriter, op, {*buffer, call.getResult(0)});
    return success();
  }
};

struct AllReduceWaitModel
    : BufferizableOpInterface::ExternalModel<AllReduceWaitModel,
                                             AllReduceWaitOp> {
  // The wait completes a write the start began: it reads and writes the
  // buffer as far as the analysis is concerned.
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (!llvm::isa<TensorType>(operand.get().getType()))
      return {};
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto wait = llvm::cast<AllReduceWaitOp>(op);
    FailureOr<Value> buffer =
        getBuffer(rewriter, wait.getInput(), options, state);
    if (failed(buffer))
      return failure();
    func::FuncOp callee = declareRuntimeFunction(
        op, "tgc_allreduce_wait",
        rewriter.getFunctionType({rewriter.getI64Type()}, {}));
    func::CallOp::create(rewriter, op->getLoc(), callee,
                         ValueRange{wait.getRequest()});
    replaceOpWithBufferizedValues(rewriter, op, {*buffer});
    return success();
  }
};

} // namespace

void mlir::tg::registerCollectiveBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TGDialect *) {
    AllReduceStartOp::attachInterface<AllReduceStartModel>(*ctx);
    AllReduceWaitOp::attachInterface<AllReduceWaitModel>(*ctx);
    ctx->loadDialect<arith::ArithDialect, memref::MemRefDialect,
                     func::FuncDialect>();
  });
}
