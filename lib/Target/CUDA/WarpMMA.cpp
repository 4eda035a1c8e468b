//===- WarpMMA.cpp - a warp's mma.sync.m16n8k16 in a block program --------===//

#include "WarpMMA.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace tgc::cuda;

FragmentOffset tgc::cuda::fragmentOffsetA(int64_t element) {
  return {8 * ((element / 2) % 2), element % 2 + 8 * (element / 4)};
}

FragmentOffset tgc::cuda::fragmentOffsetB(int64_t element) {
  return {element % 2 + 8 * (element / 2), 0};
}

FragmentOffset tgc::cuda::fragmentOffsetC(int64_t element) {
  return {8 * (element / 2), element % 2};
}

WarpMMABuilder::Lane WarpMMABuilder::lane(OpBuilder &b, Value thread) {
  Location loc = program.getLoc();
  Value laneId = arith::RemUIOp::create(b, loc, thread, program.index(32));
  Lane l;
  l.g = arith::DivUIOp::create(b, loc, laneId, program.index(4));
  l.q = arith::RemUIOp::create(b, loc, laneId, program.index(4));
  l.warpBase = arith::SubIOp::create(b, loc, thread, laneId);
  return l;
}

Value WarpMMABuilder::packPair(OpBuilder &b, Value low, Value high) {
  Location loc = program.getLoc();
  auto widened = [&](Value v) -> Value {
    Value bits = arith::BitcastOp::create(b, loc, b.getI16Type(), v);
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), bits);
  };
  Value shifted = arith::ShLIOp::create(
      b, loc, widened(high),
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(16)));
  Value packed = arith::OrIOp::create(b, loc, widened(low), shifted);
  // bf16 pairs go in as i32; f16 pairs as vector<2xf16> (the intrinsics'
  // operand types).
  if (element.isBF16())
    return packed;
  return LLVM::BitcastOp::create(b, loc, VectorType::get({2}, element), packed);
}

void WarpMMABuilder::multiplyAdd(OpBuilder &b, Value thread, const Lane &lane,
                                 Value fragA, Value fragB, int64_t bIndex,
                                 Value acc, int64_t accIndex) {
  Location loc = program.getLoc();
  auto cst = [&](int64_t v) { return program.index(v); };
  auto load = [&](Value buffer, ValueRange indices) -> Value {
    return memref::LoadOp::create(b, loc, buffer, indices);
  };

  if (kind == WarpMMAKind::NVVM) {
    SmallVector<Value, 4> a, bOperands, c;
    for (int64_t p = 0; p < 4; ++p)
      a.push_back(packPair(b, load(fragA, {thread, cst(2 * p)}),
                           load(fragA, {thread, cst(2 * p + 1)})));
    for (int64_t p = 0; p < 2; ++p)
      bOperands.push_back(
          packPair(b, load(fragB, {thread, cst(bIndex), cst(2 * p)}),
                   load(fragB, {thread, cst(bIndex), cst(2 * p + 1)})));
    for (int64_t i = 0; i < 4; ++i)
      c.push_back(load(acc, {thread, cst(accIndex), cst(i)}));
    Type f32 = b.getF32Type();
    auto resultType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    NVVM::MMATypes ptxType =
        element.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    auto mma = NVVM::MmaOp::create(
        b, loc, resultType, a, bOperands, c, /*shape=*/{16, 8, 16},
        /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
        std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    for (int64_t i = 0; i < 4; ++i) {
      Value d = LLVM::ExtractValueOp::create(b, loc, mma, ArrayRef<int64_t>{i});
      memref::StoreOp::create(b, loc, d, acc,
                              ValueRange{thread, cst(accIndex), cst(i)});
    }
    return;
  }

  // Emulated: C element i of this lane is (row r, column n) with
  // r = g + 8 (i / 2), n = 2q + i % 2; it gathers A(r, k) from lane
  // 4 (r % 8) + (k % 8) / 2, element k % 2 + 2 (r / 8) + 4 (k / 8), and
  // B(k, n) from lane 4n + (k % 8) / 2, element k % 2 + 2 (k / 8): the
  // inverses of the layouts in WarpMMA.h.
  auto add = [&](OpBuilder &builder, Value x, Value y) {
    return program.add(builder, x, y);
  };
  auto mul = [&](OpBuilder &builder, Value x, int64_t y) {
    return program.mul(builder, x, y);
  };
  auto div = [&](OpBuilder &builder, Value x, int64_t y) -> Value {
    return arith::DivUIOp::create(builder, loc, x, cst(y));
  };
  auto rem = [&](OpBuilder &builder, Value x, int64_t y) -> Value {
    return arith::RemUIOp::create(builder, loc, x, cst(y));
  };
  for (int64_t i = 0; i < 4; ++i) {
    FragmentOffset offset = fragmentOffsetC(i);
    int64_t rowHalf = offset.row / 8;
    Value n = add(b, mul(b, lane.q, 2), cst(offset.col));
    SmallVector<Value, 3> at{thread, cst(accIndex), cst(i)};
    Value start = load(acc, at);
    auto kLoop =
        scf::ForOp::create(b, loc, cst(0), cst(16), cst(1), ValueRange{start});
    {
      OpBuilder kb = OpBuilder::atBlockBegin(kLoop.getBody());
      Value k = kLoop.getInductionVar();
      Value pairInK = div(kb, rem(kb, k, 8), 2);
      Value laneA = add(kb, mul(kb, lane.g, 4), pairInK);
      Value elementA = add(kb, add(kb, rem(kb, k, 2), cst(2 * rowHalf)),
                           mul(kb, div(kb, k, 8), 4));
      Value laneB = add(kb, mul(kb, n, 4), pairInK);
      Value elementB = add(kb, rem(kb, k, 2), mul(kb, div(kb, k, 8), 2));
      Value av = memref::LoadOp::create(
          kb, loc, fragA, ValueRange{add(kb, lane.warpBase, laneA), elementA});
      Value bv = memref::LoadOp::create(
          kb, loc, fragB,
          ValueRange{add(kb, lane.warpBase, laneB), cst(bIndex), elementB});
      Type f32 = kb.getF32Type();
      Value product = arith::MulFOp::create(
          kb, loc, arith::ExtFOp::create(kb, loc, f32, av),
          arith::ExtFOp::create(kb, loc, f32, bv));
      Value sum =
          arith::AddFOp::create(kb, loc, kLoop.getRegionIterArgs()[0], product);
      scf::YieldOp::create(kb, loc, sum);
    }
    memref::StoreOp::create(b, loc, kLoop.getResult(0), acc, at);
  }
}
