//===- BlockProgram.cpp - building block programs -------------------------===//

#include "BlockProgram.h"
#include "tgc/Target/CUDA/Passes.h"

#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace tgc::cuda;

BlockProgramBuilder::BlockProgramBuilder(Operation *anchor,
                                         std::array<int64_t, 3> gridSize,
                                         int64_t threads)
    : loc(anchor->getLoc()), context(anchor->getContext()), threads(threads),
      bodyBuilder(anchor->getContext()) {
  OpBuilder b(anchor);
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value zero = constant(0), one = constant(1);
  grid = scf::ParallelOp::create(b, loc, ValueRange{zero, zero, zero},
                                 ValueRange{constant(gridSize[0]),
                                            constant(gridSize[1]),
                                            constant(gridSize[2])},
                                 ValueRange{one, one, one});
  grid->setAttr(kBlockProgramAttrName, UnitAttr::get(context));
  bodyBuilder.setInsertionPoint(grid.getBody()->getTerminator());
}

Value BlockProgramBuilder::index(int64_t value) {
  Value &constant = indexConstants[value];
  if (!constant) {
    OpBuilder top = OpBuilder::atBlockBegin(grid.getBody());
    constant = arith::ConstantIndexOp::create(top, loc, value);
  }
  return constant;
}

Value BlockProgramBuilder::floating(double value, unsigned bits) {
  uint64_t key = bits == 32
                     ? llvm::bit_cast<uint32_t>(static_cast<float>(value))
                     : llvm::bit_cast<uint64_t>(value);
  Value &constant = floatConstants[{key, bits}];
  if (!constant) {
    OpBuilder top = OpBuilder::atBlockBegin(grid.getBody());
    FloatType type =
        bits == 32 ? FloatType(top.getF32Type()) : FloatType(top.getF64Type());
    constant =
        arith::ConstantOp::create(top, loc, top.getFloatAttr(type, value));
  }
  return constant;
}

Value BlockProgramBuilder::shared(ArrayRef<int64_t> shape, Type element) {
  if (!element)
    element = bodyBuilder.getF32Type();
  auto buffer = memref::AllocaOp::create(bodyBuilder, loc,
                                         MemRefType::get(shape, element));
  buffer->setAttr(kSharedAttrName, UnitAttr::get(context));
  return buffer;
}

Value BlockProgramBuilder::perThread(ArrayRef<int64_t> shape, Type element) {
  if (!element)
    element = bodyBuilder.getF32Type();
  SmallVector<int64_t> withThread{threads};
  withThread.append(shape.begin(), shape.end());
  auto buffer = memref::AllocaOp::create(bodyBuilder, loc,
                                         MemRefType::get(withThread, element));
  buffer->setAttr(kPerThreadAttrName, UnitAttr::get(context));
  return buffer;
}

void BlockProgramBuilder::phase(OpBuilder &at,
                                function_ref<void(OpBuilder &, Value)> build) {
  auto loop =
      scf::ParallelOp::create(at, loc, ValueRange{index(0)},
                              ValueRange{index(threads)}, ValueRange{index(1)});
  loop->setAttr(kPhaseAttrName, UnitAttr::get(context));
  OpBuilder inner = OpBuilder::atBlockTerminator(loop.getBody());
  build(inner, loop.getInductionVars()[0]);
}

void BlockProgramBuilder::forEach(
    OpBuilder &at, int64_t n, function_ref<void(OpBuilder &, Value)> build) {
  auto loop = scf::ForOp::create(at, loc, index(0), index(n), index(1));
  OpBuilder inner = OpBuilder::atBlockTerminator(loop.getBody());
  build(inner, loop.getInductionVar());
}

Value BlockProgramBuilder::add(OpBuilder &b, Value x, Value y) {
  return arith::AddIOp::create(b, loc, x, y);
}

Value BlockProgramBuilder::mul(OpBuilder &b, Value x, int64_t y) {
  return arith::MulIOp::create(b, loc, x, index(y));
}

Value BlockProgramBuilder::less(OpBuilder &b, Value x, int64_t bound) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x,
                               index(bound));
}
