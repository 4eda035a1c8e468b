//===- InterpreterTest.cpp - how the oracle stores its results ------------===//
//
// The reference interpreter computes in f64 and rounds each result to its
// element type where that type is bf16 or f16, and, when asked, where it is
// f32: the floor of comparisons between the oracle and compiled
// mixed-precision code.
//
//===----------------------------------------------------------------------===//

#include "tgc/Reference/Interpreter.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using tgc::ref::InterpretOptions;
using tgc::ref::Tensor;

namespace {

constexpr const char *kIR = R"mlir(
func.func @f(%a: tensor<2xf32>, %b: tensor<2xf32>)
    -> (tensor<2xf32>, tensor<2xbf16>) {
  %s = tg.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %r = tg.cast %s : tensor<2xf32> -> tensor<2xbf16>
  return %s, %r : tensor<2xf32>, tensor<2xbf16>
}
)mlir";

/// Runs @f on a = {1, 1}, b = {2^-30, 2^-8 + 2^-30}.
std::vector<Tensor> run(const InterpretOptions &options) {
  MLIRContext context;
  context.loadDialect<tg::TGDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kIR, &context);
  EXPECT_TRUE(module);
  auto f = module->lookupSymbol<func::FuncOp>("f");
  Tensor a({2}, 1.0), b({2});
  b[0] = std::ldexp(1.0, -30);
  b[1] = std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  auto results = tgc::ref::interpret(f, {a, b}, options);
  EXPECT_TRUE(static_cast<bool>(results));
  return results ? *results : std::vector<Tensor>{};
}

TEST(Interpreter, KeepsF64ValuesOfF32ResultsByDefault) {
  std::vector<Tensor> r = run({});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0][0], 1.0 + std::ldexp(1.0, -30));
  // 1 + 2^-8 + 2^-30 is past the bf16 tie at 1 + 2^-8: rounds up.
  EXPECT_EQ(r[1][1], 1.0 + std::ldexp(1.0, -7));
}

TEST(Interpreter, RoundsF32ResultsWithStoreF32) {
  InterpretOptions options;
  options.storeF32 = true;
  std::vector<Tensor> r = run(options);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0][0], 1.0);
  EXPECT_EQ(r[0][1], 1.0 + std::ldexp(1.0, -8));
  // Stored as f32 first, the sum is the tie and rounds to even (down): the
  // flip that f32-sized differences cause at a bf16 rounding.
  EXPECT_EQ(r[1][1], 1.0);
}

} // namespace
