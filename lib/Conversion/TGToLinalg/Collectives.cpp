//===- Collectives.cpp - tg collectives bufferize into runtime calls ------===//
//
// tg's collectives (and ZeRO-1's tg.shard) are not lowered to linalg: they
// stay on tensors until One-Shot Bufferize, whose analysis keeps every other
// read and write of their buffers out from between start and wait, and then
// become calls of the runtime (lib/Runtime/Distributed.h), e.g.:
//
//   call @tgc_allreduce_add(%address, %count) : (i64, i64) -> ()  // each
//   %request = call @tgc_allreduce_start(%weight) : (f32) -> i64
//   ...
//   call @tgc_collective_wait(%request) : (i64) -> ()
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
  Type element = type.getElementType();
  if (!(element.isF32() || element.isF64() || element.isBF16() ||
        element.isF16()) ||
      !type.hasStaticShape() ||
      !type.areTrailingDimsContiguous(type.getRank()))
    return op->emitError("needs a contiguous float buffer of static shape, "
                         "got ")
           << type;
  auto metadata =
      memref::ExtractStridedMetadataOp::create(rewriter, loc, buffer);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      rewriter, loc, metadata.getBaseBuffer());
  Value bytes = arith::MulIOp::create(
      rewriter, loc, metadata.getOffset(),
      arith::ConstantIndexOp::create(rewriter, loc,
                                     element.getIntOrFloatBitWidth() / 8));
  Value address = arith::AddIOp::create(rewriter, loc, base, bytes);
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                    address)
      .getResult();
}

/// A start whose inputs the collective reads and rewrites in place (the
/// weight scales them): input i is result i; other operands are only read.
template <typename Model, typename StartOp>
struct InputsInPlaceModel
    : BufferizableOpInterface::ExternalModel<Model, StartOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &) const {
    return operand.getOperandNumber() <
           llvm::cast<StartOp>(op).getInputs().size();
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    auto start = llvm::cast<StartOp>(op);
    unsigned i = operand.getOperandNumber();
    if (i >= start.getInputs().size())
      return {};
    return {{start.getResults()[i], BufferRelation::Equivalent}};
  }
};

struct AllReduceStartModel
    : InputsInPlaceModel<AllReduceStartModel, AllReduceStartOp> {
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

struct CollectiveWaitModel
    : BufferizableOpInterface::ExternalModel<CollectiveWaitModel,
                                             CollectiveWaitOp> {
  // The wait completes a write the start began: it reads and writes the
  // buffer as far as the analysis is concerned.
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &operand,
                               const AnalysisState &) const {
    // The shards a gather sends are only read: a parameter's shard (ZeRO-3)
    // may be in flight in several gathers, and no copy is made of it.
    Operation *start = operand.get().getDefiningOp();
    size_t sent = 0;
    if (auto gather = llvm::dyn_cast_or_null<AllGatherStartOp>(start))
      sent = gather.getShards().size();
    if (auto gather = llvm::dyn_cast_or_null<ParameterGatherStartOp>(start))
      sent = gather.getShards().size();
    return !start ||
           llvm::cast<OpResult>(operand.get()).getResultNumber() >= sent;
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
    auto wait = llvm::cast<CollectiveWaitOp>(op);
    SmallVector<Value> buffers;
    for (Value input : wait.getInputs()) {
      FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    // A collective may read buffers that nothing reads after it (ZeRO-1's
    // summed gradient, the shard an all-gather sends): the runtime checks
    // each belongs to the request, which keeps it alive, for the buffer
    // planner, until here.
    auto i64 = rewriter.getI64Type();
    func::FuncOp holds = declareRuntimeFunction(
        op, "tgc_collective_holds", rewriter.getFunctionType({i64, i64}, {}));
    for (Value buffer : buffers) {
      FailureOr<Value> address = addressOf(rewriter, op->getLoc(), op, buffer);
      if (failed(address))
        return failure();
      func::CallOp::create(rewriter, op->getLoc(), holds,
                           ValueRange{wait.getRequest(), *address});
    }
    func::FuncOp callee = declareRuntimeFunction(
        op, "tgc_collective_wait",
        rewriter.getFunctionType({rewriter.getI64Type()}, {}));
    func::CallOp::create(rewriter, op->getLoc(), callee,
                         ValueRange{wait.getRequest()});
    replaceOpWithBufferizedValues(rewriter, op, buffers);
    return success();
  }
};

/// Element count of a statically shaped buffer, as an i64 constant.
Value countOf(RewriterBase &rewriter, Location loc, Value buffer) {
  return arith::ConstantIntOp::create(
      rewriter, loc, rewriter.getI64Type(),
      llvm::cast<MemRefType>(buffer.getType()).getNumElements());
}

/// A new buffer for the tensor result `result` (a shard, or a whole tensor
/// an all-gather fills).
FailureOr<Value> allocateFor(RewriterBase &rewriter, Location loc, Value result,
                             const BufferizationOptions &options) {
  auto tensor = llvm::cast<RankedTensorType>(result.getType());
  return options.createAlloc(
      rewriter, loc,
      MemRefType::get(tensor.getShape(), tensor.getElementType()), {});
}

/// Calls the runtime function `name(whole, count, shard, shard_count)` on a
/// (whole tensor, shard) pair: `tgc_zero_add` hands it to the next ZeRO-1
/// collective, `tgc_shard_copy` cuts this process's shard.
LogicalResult callWithShardPair(RewriterBase &rewriter, Location loc,
                                Operation *op, StringRef name, Value whole,
                                Value shard) {
  auto i64 = rewriter.getI64Type();
  func::FuncOp callee = declareRuntimeFunction(
      op, name, rewriter.getFunctionType({i64, i64, i64, i64}, {}));
  FailureOr<Value> wholeAddress = addressOf(rewriter, loc, op, whole);
  FailureOr<Value> shardAddress = addressOf(rewriter, loc, op, shard);
  if (failed(wholeAddress) || failed(shardAddress))
    return failure();
  func::CallOp::create(rewriter, loc, callee,
                       ValueRange{*wholeAddress, countOf(rewriter, loc, whole),
                                  *shardAddress,
                                  countOf(rewriter, loc, shard)});
  return success();
}

struct ReduceScatterStartModel
    : InputsInPlaceModel<ReduceScatterStartModel, ReduceScatterStartOp> {
  // The shards are new buffers the collective fills.
  bool bufferizesToAllocation(Operation *op, Value value) const {
    return llvm::is_contained(llvm::cast<ReduceScatterStartOp>(op).getShards(),
                              value);
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto start = llvm::cast<ReduceScatterStartOp>(op);
    Location loc = op->getLoc();
    SmallVector<Value> inputs, shards;
    for (auto [input, shard] :
         llvm::zip(start.getInputs(), start.getShards())) {
      FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
      if (failed(buffer))
        return failure();
      FailureOr<Value> shardBuffer = allocateFor(rewriter, loc, shard, options);
      if (failed(shardBuffer) ||
          failed(callWithShardPair(rewriter, loc, op, "tgc_zero_add", *buffer,
                                   *shardBuffer)))
        return failure();
      inputs.push_back(*buffer);
      shards.push_back(*shardBuffer);
    }
    FailureOr<Value> weightBuffer =
        getBuffer(rewriter, start.getWeight(), options, state);
    if (failed(weightBuffer))
      return failure();
    Value weight = memref::LoadOp::create(rewriter, loc, *weightBuffer);
    func::FuncOp begin = declareRuntimeFunction(
        op, "tgc_reduce_scatter_start",
        rewriter.getFunctionType({rewriter.getF32Type()},
                                 {rewriter.getI64Type()}));
    auto call = func::CallOp::create(rewriter, loc, begin, ValueRange{weight});
    llvm::append_range(inputs, shards);
    inputs.push_back(call.getResult(0));
    replaceOpWithBufferizedValues(rewriter, op, inputs);
    return success();
  }
};

/// ZeRO-1's tg.all_gather_start and ZeRO-3's tg.parameter_gather_start.
/// The shards are sent (read until the wait). The whole tensors are new
/// buffers the gather fills completely: ZeRO-1's, returned, become the
/// step's output buffers (the runtime's parameters when it updates in
/// place), so the old parameters are neither read nor written here;
/// ZeRO-3's live in the arena until their last reader.
template <typename GatherOp>
struct GatherStartModel
    : BufferizableOpInterface::ExternalModel<GatherStartModel<GatherOp>,
                                             GatherOp> {
  bool isShard(Operation *op, OpOperand &operand) const {
    return operand.getOperandNumber() <
           llvm::cast<GatherOp>(op).getShards().size();
  }
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return isShard(op, operand);
  }
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (!isShard(op, operand))
      return {};
    return {{op->getResult(operand.getOperandNumber()),
             BufferRelation::Equivalent}};
  }
  bool bufferizesToAllocation(Operation *op, Value value) const {
    return llvm::is_contained(llvm::cast<GatherOp>(op).getResults(), value);
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto start = llvm::cast<GatherOp>(op);
    Location loc = op->getLoc();
    SmallVector<Value> shards, wholes;
    for (auto [shard, result] :
         llvm::zip(start.getShards(), start.getResults())) {
      FailureOr<Value> shardBuffer = getBuffer(rewriter, shard, options, state);
      if (failed(shardBuffer))
        return failure();
      FailureOr<Value> wholeBuffer =
          allocateFor(rewriter, loc, result, options);
      // ZeRO-3 gathers bf16-mixed weights in their 16-bit type.
      bool half = llvm::cast<RankedTensorType>(result.getType())
                      .getElementType()
                      .getIntOrFloatBitWidth() == 16;
      if (failed(wholeBuffer) ||
          failed(callWithShardPair(rewriter, loc, op,
                                   half ? "tgc_zero_add16" : "tgc_zero_add",
                                   *wholeBuffer, *shardBuffer)))
        return failure();
      shards.push_back(*shardBuffer);
      wholes.push_back(*wholeBuffer);
    }
    func::FuncOp begin = declareRuntimeFunction(
        op, "tgc_all_gather_start",
        rewriter.getFunctionType({}, {rewriter.getI64Type()}));
    auto call = func::CallOp::create(rewriter, loc, begin, ValueRange{});
    llvm::append_range(shards, wholes);
    shards.push_back(call.getResult(0));
    replaceOpWithBufferizedValues(rewriter, op, shards);
    return success();
  }
};

struct ShardModel
    : BufferizableOpInterface::ExternalModel<ShardModel, ShardOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto shard = llvm::cast<ShardOp>(op);
    Location loc = op->getLoc();
    FailureOr<Value> whole =
        getBuffer(rewriter, shard.getInput(), options, state);
    if (failed(whole))
      return failure();
    FailureOr<Value> part =
        allocateFor(rewriter, loc, shard.getResult(), options);
    if (failed(part))
      return failure();
    if (failed(callWithShardPair(rewriter, loc, op, "tgc_shard_copy", *whole,
                                 *part)))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, *part);
    return success();
  }
};

struct SumOverProcessesModel
    : BufferizableOpInterface::ExternalModel<SumOverProcessesModel,
                                             SumOverProcessesOp> {
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
    return {{op->getResult(operand.getOperandNumber()),
             BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    // The scalars are packed into one buffer: one blocking all-reduce.
    Location loc = op->getLoc();
    int64_t n = op->getNumOperands();
    auto f64 = rewriter.getF64Type();
    FailureOr<Value> packed =
        options.createAlloc(rewriter, loc, MemRefType::get({n}, f64), {});
    if (failed(packed))
      return failure();
    SmallVector<Value> buffers;
    for (OpOperand &operand : op->getOpOperands()) {
      FailureOr<Value> buffer =
          getBuffer(rewriter, operand.get(), options, state);
      if (failed(buffer))
        return failure();
      Value i = arith::ConstantIndexOp::create(rewriter, loc,
                                               operand.getOperandNumber());
      memref::StoreOp::create(rewriter, loc,
                              memref::LoadOp::create(rewriter, loc, *buffer),
                              *packed, i);
      buffers.push_back(*buffer);
    }
    FailureOr<Value> address = addressOf(rewriter, loc, op, *packed);
    if (failed(address))
      return failure();
    auto i64 = rewriter.getI64Type();
    func::FuncOp sum = declareRuntimeFunction(
        op, "tgc_sum_over_processes", rewriter.getFunctionType({i64, i64}, {}));
    func::CallOp::create(rewriter, loc, sum,
                         ValueRange{*address, countOf(rewriter, loc, *packed)});
    for (auto [i, buffer] : llvm::enumerate(buffers)) {
      Value index = arith::ConstantIndexOp::create(rewriter, loc, i);
      memref::StoreOp::create(
          rewriter, loc, memref::LoadOp::create(rewriter, loc, *packed, index),
          buffer);
    }
    replaceOpWithBufferizedValues(rewriter, op, buffers);
    return success();
  }
};

} // namespace

void mlir::tg::registerCollectiveBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TGDialect *) {
    AllReduceStartOp::attachInterface<AllReduceStartModel>(*ctx);
    CollectiveWaitOp::attachInterface<CollectiveWaitModel>(*ctx);
    ReduceScatterStartOp::attachInterface<ReduceScatterStartModel>(*ctx);
    AllGatherStartOp::attachInterface<GatherStartModel<AllGatherStartOp>>(
        *ctx);
    ParameterGatherStartOp::attachInterface<
        GatherStartModel<ParameterGatherStartOp>>(*ctx);
    ShardOp::attachInterface<ShardModel>(*ctx);
    SumOverProcessesOp::attachInterface<SumOverProcessesModel>(*ctx);
    ctx->loadDialect<arith::ArithDialect, memref::MemRefDialect,
                     func::FuncDialect>();
  });
}
