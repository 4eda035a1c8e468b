//===- DialectTest.cpp - building tg ops through the C++ API --------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/IR/TypeInference.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::tg;

namespace {

class TGDialectTest : public ::testing::Test {
protected:
  TGDialectTest() : builder(&context) {
    context.loadDialect<TGDialect, func::FuncDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
  }

  /// A fresh block argument of the given type, to use as an operand. Ops are
  /// built into the same free block, which the test owns.
  Value arg(ArrayRef<int64_t> shape, Type elementType = nullptr) {
    if (!elementType)
      elementType = builder.getF32Type();
    return block->addArgument(RankedTensorType::get(shape, elementType),
                              builder.getUnknownLoc());
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<Block> block = std::make_unique<Block>();
};

TEST_F(TGDialectTest, MatmulInfersBatchedShape) {
  Value lhs = arg({2, 8, 64});
  Value rhs = arg({64, 32});
  builder.setInsertionPointToEnd(block.get());
  auto op = MatmulOp::create(builder, builder.getUnknownLoc(), lhs, rhs);
  EXPECT_EQ(op.getType(),
            RankedTensorType::get({2, 8, 32}, builder.getF32Type()));
  EXPECT_TRUE(succeeded(verify(op)));
}

TEST_F(TGDialectTest, MatmulTransposeFlags) {
  Value q = arg({4, 8, 16});
  Value k = arg({4, 8, 16});
  builder.setInsertionPointToEnd(block.get());
  auto op = MatmulOp::create(builder, builder.getUnknownLoc(), q, k,
                             /*transpose_lhs=*/false, /*transpose_rhs=*/true);
  EXPECT_EQ(op.getType().getShape(), ArrayRef<int64_t>({4, 8, 8}));
}

TEST_F(TGDialectTest, LinearUsesOutInLayout) {
  Value x = arg({3, 784});
  Value w = arg({512, 784});
  Value b = arg({512});
  builder.setInsertionPointToEnd(block.get());
  auto op = LinearOp::create(builder, builder.getUnknownLoc(), x, w, b);
  EXPECT_EQ(op.getType().getShape(), ArrayRef<int64_t>({3, 512}));
}

TEST_F(TGDialectTest, AttentionGroupedQuery) {
  Value q = arg({2, 8, 4, 16});
  Value k = arg({2, 8, 2, 16});
  Value v = arg({2, 8, 2, 16});
  builder.setInsertionPointToEnd(block.get());
  auto op = AttentionOp::create(builder, builder.getUnknownLoc(), q, k, v,
                                /*causal=*/true, /*scale=*/nullptr,
                                /*window=*/nullptr, /*softcap=*/nullptr,
                                /*positions=*/Value());
  EXPECT_EQ(op.getResult().getType().getShape(),
            ArrayRef<int64_t>({2, 8, 4, 16}));
  EXPECT_EQ(op.getLogsumexp().getType().getShape(),
            ArrayRef<int64_t>({2, 8, 4}));
  EXPECT_DOUBLE_EQ(op.getScaleOrDefault(), 0.25);
}

TEST_F(TGDialectTest, EmbeddingAndCrossEntropy) {
  Value table = arg({256, 64});
  Value ids = arg({2, 8}, builder.getI32Type());
  builder.setInsertionPointToEnd(block.get());
  auto emb = EmbeddingOp::create(builder, builder.getUnknownLoc(), table, ids);
  EXPECT_EQ(emb.getType().getShape(), ArrayRef<int64_t>({2, 8, 64}));
  Value logits = arg({2, 8, 256});
  builder.setInsertionPointToEnd(block.get());
  auto loss = CrossEntropyOp::create(builder, builder.getUnknownLoc(), logits,
                                     ids, /*ignore_index=*/nullptr,
                                     /*softcap=*/nullptr);
  EXPECT_EQ(loss.getType().getRank(), 0);
}

TEST_F(TGDialectTest, BroadcastRules) {
  EXPECT_EQ(*broadcastShapes({2, 1, 4}, {3, 1}),
            SmallVector<int64_t>({2, 3, 4}));
  EXPECT_FALSE(broadcastShapes({2, 3}, {4}).has_value());
  EXPECT_TRUE(isBroadcastableTo({64}, {2, 8, 64}));
  EXPECT_FALSE(isBroadcastableTo({2, 8, 64}, {64}));
  EXPECT_FALSE(isBroadcastableTo({3}, {2, 4}));
}

TEST_F(TGDialectTest, ShapeRuleReportsReason) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto f32 = builder.getF32Type();
  auto lhs = RankedTensorType::get({2, 3}, f32);
  auto rhs = RankedTensorType::get({4, 5}, f32);
  Location loc = builder.getUnknownLoc();
  auto result =
      inferMatmul(lhs, rhs, false, false, [&] { return emitError(loc); });
  EXPECT_TRUE(failed(result));
  EXPECT_NE(message.find("contraction sizes differ"), std::string::npos);
  // Without an emitter the rule fails quietly.
  message.clear();
  EXPECT_TRUE(failed(inferMatmul(lhs, rhs, false, false, nullptr)));
  EXPECT_TRUE(message.empty());
}

TEST_F(TGDialectTest, ParsePrintRoundTrip) {
  const char *source = R"mlir(
    func.func @f(%x: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
      %0 = tg.rope %x {theta = 5.0e+05 : f64} : tensor<2x8x4x16xf32>
      return %0 : tensor<2x8x4x16xf32>
    })mlir";
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(parsed);
  RopeOp rope;
  parsed->walk([&](RopeOp op) { rope = op; });
  ASSERT_TRUE(rope);
  EXPECT_DOUBLE_EQ(rope.getTheta().convertToDouble(), 5.0e5);
}

TEST_F(TGDialectTest, ScaleFoldsIntoOne) {
  Value x = arg({4});
  builder.setInsertionPointToEnd(block.get());
  Location loc = builder.getUnknownLoc();
  auto inner = ScaleOp::create(builder, loc, x, builder.getF64FloatAttr(2.0));
  auto outer =
      ScaleOp::create(builder, loc, inner, builder.getF64FloatAttr(0.25));
  SmallVector<OpFoldResult> results;
  ASSERT_TRUE(succeeded(outer->fold(results)));
  EXPECT_EQ(outer.getInput(), x);
  EXPECT_DOUBLE_EQ(outer.getFactor().convertToDouble(), 0.5);
}

} // namespace

namespace {

// Every tg op states its cost: statistics and rematerialisation read costs
// through CostOpInterface only, so an op without one would silently count as
// free. (The interface has no default, so a missing implementation fails to
// compile; this also catches an op left out of the interface list.)
TEST(TGCostInterface, EveryOpHasACost) {
  MLIRContext context;
  context.loadDialect<TGDialect>();
  int ops = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != TGDialect::getDialectNamespace())
      continue;
    ++ops;
    EXPECT_TRUE(name.hasInterface<CostOpInterface>())
        << name.getStringRef().str();
  }
  EXPECT_GT(ops, 30);
}

TEST(TGCostInterface, MatmulCountsMultiplications) {
  MLIRContext context;
  context.loadDialect<TGDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%a: tensor<2x8x64xf32>, %b: tensor<64x32xf32>) -> tensor<2x8x32xf32> {
      %y = tg.matmul %a, %b : tensor<2x8x64xf32>, tensor<64x32xf32> -> tensor<2x8x32xf32>
      return %y : tensor<2x8x32xf32>
    })mlir",
                                                             &context);
  ASSERT_TRUE(module);
  OpCost cost{};
  module->walk([&](MatmulOp op) { cost = op.getCost(); });
  EXPECT_EQ(cost.matmulMultiplications, 2 * 8 * 32 * 64);
  EXPECT_EQ(cost.flops, 2 * 2 * 8 * 32 * 64);
}

} // namespace
