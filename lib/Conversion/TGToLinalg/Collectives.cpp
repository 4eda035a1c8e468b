//===- Collectives.cpp - tg collectives bufferize into runtime calls ------===//
//
// tg.all_reduce_start and tg.all_reduce_wait are not lowered to linalg: they
// stay on tensors until One-Shot Bufferize, whose analysis keeps every other
// read and write of the gradient's buffer out from between them, and then
// become calls of the runtime (lib/Runtime/Distributed.h):
//
//   call @tgc_allreduce_add(%address, %count) : (i64, i64) -> ()  // each
//   %request = call @tgc_allreduce_start(%weight) : (f32) -> i64
//   ...
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
    // The sums replace the inputs; the weight is only read.
    return operand.getOperandNumber() <
           llvm::cast<AllReduceStartOp>(op).getInputs().size();
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    auto start = llvm::cast<AllReduceStartOp>(op);
    unsigned i = operand.getOperandNumber();
    if (i >= start.getInputs().size())
      return {};
    return {{start.getResults()[i], BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto start = llvm::cast<AllReduceStartOp>(op);
    Location loc = op->getLoc();
    auto i64 = rewriter.getI64Type();
    func::FuncOp add = declareRuntimeFunction(
        op, "tgc_allreduce_add", rewriter.getFunctionType({i64, i64}, {}));
    func::FuncOp begin = declareRuntimeFunction(
        op, "tgc_allreduce_start",
        rewriter.getFunctionType({rewriter.getF32Type()}, {i64}));
    // The bucket: each buffer's address and element count, then the start.
    SmallVector<Value> buffers;
    for (Value input : start.getInputs()) {
      FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
      if (failed(buffer))
        return failure();
      FailureOr<Value> address = addressOf(rewriter, loc, op, *buffer);
      if (failed(address))
        return failure();
      Value count = arith::ConstantIntOp::create(
          rewriter, loc, i64,
          llvm::cast<MemRefType>(buffer->getType()).getNumElements());
      func::CallOp::create(rewriter, loc, add, ValueRange{*address, count});
      buffers.push_back(*buffer);
    }
    FailureOr<Value> weightBuffer =
        getBuffer(rewriter, start.getWeight(), options, state);
    if (failed(weightBuffer))
      return failure();
    Value weight = memref::LoadOp::create(rewriter, loc, *weightBuffer);
    auto call = func::CallOp::create(rewriter, loc, begin, ValueRange{weight});
    buffers.push_back(call.getResult(0));
    replaceOpWithBufferizedValues(rewriter, op, buffers);
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
    // Operand 0 is the request; input i is result i.
    return {{op->getResult(operand.getOperandNumber() - 1),
             BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto wait = llvm::cast<AllReduceWaitOp>(op);
    SmallVector<Value> buffers;
    for (Value input : wait.getInputs()) {
      FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    func::FuncOp callee = declareRuntimeFunction(
        op, "tgc_allreduce_wait",
        rewriter.getFunctionType({rewriter.getI64Type()}, {}));
    func::CallOp::create(rewriter, op->getLoc(), callee,
                         ValueRange{wait.getRequest()});
    replaceOpWithBufferizedValues(rewriter, op, buffers);
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
