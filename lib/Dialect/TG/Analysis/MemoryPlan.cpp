//===- MemoryPlan.cpp - liveness and a static arena plan ------------------===//

#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace mlir::tg;

int64_t mlir::tg::getTypeBytes(Type type) {
  auto shaped = llvm::dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  int64_t bits = shaped.getElementTypeBitWidth();
  return shaped.getNumElements() * std::max<int64_t>(1, bits / 8);
}

int64_t mlir::tg::getValueBytes(Value value) {
  return getTypeBytes(value.getType());
}

int64_t mlir::tg::assignArenaOffsets(std::vector<ArenaBlock> &blocks,
                                     int64_t alignment) {
  std::vector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (blocks[a].bytes != blocks[b].bytes)
      return blocks[a].bytes > blocks[b].bytes;
    return blocks[a].start < blocks[b].start;
  });

  int64_t arena = 0;
  auto sizeOf = [&](const ArenaBlock &b) {
    return static_cast<int64_t>(
        llvm::alignTo(std::max<int64_t>(b.bytes, 1), alignment));
  };
  // The placed blocks in increasing offset, so that those alive with a new
  // block come out in the order the gap search reads them (no sort per
  // block: models with thousands of experts place ~10^5 blocks).
  std::vector<size_t> placed;
  for (size_t index : order) {
    ArenaBlock &block = blocks[index];
    int64_t size = sizeOf(block);
    // The lowest gap that holds the block.
    int64_t offset = 0;
    for (size_t other : placed) {
      const ArenaBlock &o = blocks[other];
      if (o.start > block.end || block.start > o.end)
        continue;
      if (o.offset >= offset + size)
        break;
      offset = std::max(offset, o.offset + sizeOf(o));
    }
    block.offset = offset;
    arena = std::max(arena, offset + size);
    auto at = std::upper_bound(
        placed.begin(), placed.end(), offset,
        [&](int64_t off, size_t other) { return off < blocks[other].offset; });
    placed.insert(at, index);
  }
  return arena;
}

namespace {
/// The operand whose storage `result` shares once bufferized, or null: a
/// view's source, and the tensors a collective works on in place between
/// its start and its wait (the whole tensors a gather fills are new).
Value storageSource(OpResult result) {
  Operation *op = result.getOwner();
  unsigned i = result.getResultNumber();
  if (op->hasTrait<StorageView>())
    return op->getOperand(0);
  if (auto wait = llvm::dyn_cast<CollectiveWaitOp>(op))
    return wait.getInputs()[i];
  if (auto start = llvm::dyn_cast<AllReduceStartOp>(op))
    return i < start.getInputs().size() ? start.getInputs()[i] : Value();
  if (auto start = llvm::dyn_cast<ReduceScatterStartOp>(op))
    return i < start.getInputs().size() ? start.getInputs()[i] : Value();
  if (auto start = llvm::dyn_cast<AllGatherStartOp>(op))
    return i < start.getShards().size() ? start.getShards()[i] : Value();
  if (auto start = llvm::dyn_cast<ParameterGatherStartOp>(op))
    return i < start.getShards().size() ? start.getShards()[i] : Value();
  return Value();
}
} // namespace

MemoryPlan mlir::tg::planMemory(func::FuncOp func) {
  MemoryPlan plan;
  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  for (Operation &op : body) {
    position[&op] = plan.schedule.size();
    plan.schedule.push_back(&op);
  }
  int64_t last = static_cast<int64_t>(plan.schedule.size()) - 1;

  // Storage classes: a value and the views of it.
  llvm::EquivalenceClasses<Value> storage;
  llvm::DenseSet<Value> returned(body.getTerminator()->operand_begin(),
                                 body.getTerminator()->operand_end());
  SmallVector<Value> intermediates;
  for (Operation &op : body.without_terminator()) {
    if (op.hasTrait<OpTrait::ConstantLike>())
      continue;
    for (OpResult result : op.getResults()) {
      if (!llvm::isa<RankedTensorType>(result.getType()))
        continue;
      Value source = storageSource(result);
      // A view of an argument or constant lives outside the arena.
      if (source && !storage.contains(source))
        continue;
      intermediates.push_back(result);
      storage.insert(result);
      if (source)
        storage.unionSets(result, source);
    }
  }

  // One buffer per class, live from its first definition to its last use.
  llvm::DenseMap<Value, size_t> bufferOf;
  for (Value value : intermediates) {
    Value leader = storage.getLeaderValue(value);
    auto [it, inserted] = bufferOf.try_emplace(leader, plan.buffers.size());
    if (inserted) {
      PlannedBuffer buffer;
      buffer.block.start = position[value.getDefiningOp()];
      buffer.block.end = buffer.block.start;
      plan.buffers.push_back(buffer);
    }
    PlannedBuffer &buffer = plan.buffers[it->second];
    buffer.values.push_back(value);
    buffer.block.bytes = std::max(buffer.block.bytes, getValueBytes(value));
    for (Operation *user : value.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (top)
        buffer.block.end = std::max(buffer.block.end, position[top]);
    }
  }
  // A buffer that is returned directly is the caller's; one returned through
  // a view is copied out at the end.
  std::vector<PlannedBuffer> kept;
  for (PlannedBuffer &buffer : plan.buffers) {
    if (returned.contains(buffer.values.front()) && buffer.values.size() == 1)
      continue;
    if (llvm::any_of(buffer.values,
                     [&](Value v) { return returned.contains(v); }))
      buffer.block.end = last;
    kept.push_back(std::move(buffer));
  }
  plan.buffers = std::move(kept);

  std::vector<ArenaBlock> blocks;
  for (PlannedBuffer &buffer : plan.buffers)
    blocks.push_back(buffer.block);
  plan.arenaBytes = assignArenaOffsets(blocks);
  for (auto [buffer, block] : llvm::zip(plan.buffers, blocks))
    buffer.block = block;

  // Live bytes per position (difference array over the ranges).
  std::vector<int64_t> delta(plan.schedule.size() + 1, 0);
  for (const PlannedBuffer &buffer : plan.buffers) {
    delta[buffer.block.start] += buffer.block.bytes;
    delta[buffer.block.end + 1] -= buffer.block.bytes;
  }
  plan.liveBytes.resize(plan.schedule.size());
  int64_t live = 0;
  for (size_t i = 0; i < plan.schedule.size(); ++i) {
    live += delta[i];
    plan.liveBytes[i] = live;
    if (live > plan.maxLiveBytes) {
      plan.maxLiveBytes = live;
      plan.peakPosition = static_cast<int64_t>(i);
    }
  }
  return plan;
}
