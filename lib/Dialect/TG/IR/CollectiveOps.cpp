//===- CollectiveOps.cpp - tg's collectives and shards -------------------===//
//
// Result types and verifiers of the ops data parallelism adds: the
// all-reduce, reduce-scatter and all-gathers in flight, their wait, the
// ZeRO shards and the sum over processes (docs/distributed.md).
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"

using namespace mlir;
using namespace mlir::tg;

LogicalResult
AllReduceStartOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  // Each result is its input, summed in place; then the request.
  llvm::append_range(inferred, adaptor.getInputs().getTypes());
  inferred.push_back(IntegerType::get(ctx, 64));
  return success();
}

LogicalResult AllReduceStartOp::verify() {
  if (getInputs().empty())
    return emitOpError("expects at least one tensor");
  return success();
}

LogicalResult
CollectiveWaitOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  llvm::append_range(inferred, adaptor.getInputs().getTypes());
  return success();
}

/// The tensors a collective's start hands to its wait: every result but the
/// request (the last), or nothing if `op` starts no collective.
static std::optional<ResultRange> inFlightTensors(Operation *op) {
  if (!op || !isa<AllReduceStartOp, ReduceScatterStartOp, AllGatherStartOp,
                  ParameterGatherStartOp>(op))
    return std::nullopt;
  return op->getResults().drop_back();
}

LogicalResult CollectiveWaitOp::verify() {
  // A wait completes one start: its request and all that start's tensors.
  Operation *start = getRequest().getDefiningOp();
  std::optional<ResultRange> tensors = inFlightTensors(start);
  if (!tensors || !llvm::equal(*tensors, getInputs()))
    return emitOpError("expects the request and the tensors of one "
                       "tg.all_reduce_start, tg.reduce_scatter_start, "
                       "tg.all_gather_start or tg.parameter_gather_start");
  return success();
}

RankedTensorType ShardOp::getShardType(RankedTensorType full,
                                       int64_t processes) {
  int64_t numel = full.getNumElements();
  return RankedTensorType::get({(numel + processes - 1) / processes},
                               full.getElementType());
}

LogicalResult ShardOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto type = llvm::dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!type || adaptor.getProcesses() <= 0)
    return failure();
  inferred.push_back(ShardOp::getShardType(type, adaptor.getProcesses()));
  return success();
}

LogicalResult
ReduceScatterStartOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location>, Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  // The inputs (scaled in place), this process's shards, the request.
  if (adaptor.getProcesses() <= 0)
    return failure();
  llvm::append_range(inferred, adaptor.getInputs().getTypes());
  for (Type type : adaptor.getInputs().getTypes()) {
    auto tensor = llvm::dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return failure();
    inferred.push_back(ShardOp::getShardType(tensor, adaptor.getProcesses()));
  }
  inferred.push_back(IntegerType::get(ctx, 64));
  return success();
}

LogicalResult ReduceScatterStartOp::verify() {
  if (getInputs().empty())
    return emitOpError("expects at least one tensor");
  for (Value input : getInputs())
    if (!llvm::cast<RankedTensorType>(input.getType()).getElementType().isF32())
      return emitOpError("reduces f32 tensors, got ") << input.getType();
  return success();
}

LogicalResult
AllGatherStartOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  // The shards (read until the wait), the outputs (written in place).
  llvm::append_range(inferred, adaptor.getShards().getTypes());
  llvm::append_range(inferred, adaptor.getOutputs().getTypes());
  inferred.push_back(IntegerType::get(ctx, 64));
  return success();
}

LogicalResult AllGatherStartOp::verify() {
  if (getShards().empty())
    return emitOpError("expects at least one tensor");
  for (auto [shard, output] : llvm::zip(getShards(), getOutputs())) {
    auto full = llvm::cast<RankedTensorType>(output.getType());
    RankedTensorType expected = ShardOp::getShardType(full, getProcesses());
    if (shard.getType() != expected)
      return emitOpError("the shard of ")
             << full << " over " << getProcesses() << " processes is "
             << expected << ", got " << shard.getType();
    if (!full.getElementType().isF32())
      return emitOpError("gathers f32 tensors, got ") << full;
  }
  return success();
}

LogicalResult ParameterGatherStartOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location>, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  // The shards (read until the wait), the new whole tensors.
  llvm::append_range(inferred, adaptor.getShards().getTypes());
  for (Attribute type : adaptor.getWholeTypes())
    inferred.push_back(llvm::cast<TypeAttr>(type).getValue());
  inferred.push_back(IntegerType::get(ctx, 64));
  return success();
}

LogicalResult ParameterGatherStartOp::verify() {
  if (getShards().empty())
    return emitOpError("expects at least one tensor");
  if (getWholeTypes().size() != getShards().size())
    return emitOpError("expects one whole type per shard, got ")
           << getWholeTypes().size() << " for " << getShards().size()
           << " shards";
  for (auto [shard, attr] : llvm::zip(getShards(), getWholeTypes())) {
    auto full =
        llvm::dyn_cast<RankedTensorType>(llvm::cast<TypeAttr>(attr).getValue());
    Type element = full ? full.getElementType() : Type();
    if (!full || !full.hasStaticShape() ||
        !(element.isF32() || element.isBF16() || element.isF16()))
      return emitOpError("gathers f32, bf16 or f16 tensors of static shape, "
                         "got ")
             << llvm::cast<TypeAttr>(attr).getValue();
    RankedTensorType expected = ShardOp::getShardType(full, getProcesses());
    if (shard.getType() != expected)
      return emitOpError("the shard of ")
             << full << " over " << getProcesses() << " processes is "
             << expected << ", got " << shard.getType();
  }
  return success();
}

LogicalResult
SumOverProcessesOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &inferred) {
  llvm::append_range(inferred, adaptor.getInputs().getTypes());
  return success();
}
