//===- GenerationOpsTest.cpp - tg ops of a KV-cache step, in the oracle ---===//
//
// Generation's forms of tg.rope and tg.attention (at positions, against a
// cache) and tg.cache_update, checked in the reference interpreter against
// the training forms they must agree with: a prompt of S tokens at
// positions 0..S-1 is the causal forward, and one decode step at position p
// is row p of it.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Reference/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using tgc::ref::Tensor;

namespace {

// B = 2, S = L = 7 positions, Hq = 6 query heads over Hkv = 2 (G = 3),
// D = 4, a window of 3 and a soft cap, RoPE on 2 of the 4 dimensions.
constexpr const char *kIR = R"mlir(
func.func @causal(%q: tensor<2x7x6x4xf32>, %k: tensor<2x7x2x4xf32>,
                  %v: tensor<2x7x2x4xf32>) -> tensor<2x7x6x4xf32> {
  %rq = tg.rope %q {rotary_dims = 2 : i64} : tensor<2x7x6x4xf32>
  %rk = tg.rope %k {rotary_dims = 2 : i64} : tensor<2x7x2x4xf32>
  %o, %lse = tg.attention %rq, %rk, %v {causal, window = 3 : i64, softcap = 2.0 : f64} : tensor<2x7x6x4xf32>, tensor<2x7x2x4xf32>, tensor<2x7x2x4xf32> -> tensor<2x7x6x4xf32>, tensor<2x7x6xf32>
  return %o : tensor<2x7x6x4xf32>
}

// One token per sequence at `pos`, its key and value written into caches
// that hold junk at and after it.
func.func @step(%q: tensor<2x1x6x4xf32>, %k: tensor<2x1x2x4xf32>,
                %v: tensor<2x1x2x4xf32>, %kc: tensor<2x7x2x4xf32>,
                %vc: tensor<2x7x2x4xf32>, %pos: tensor<2x1xi32>)
    -> (tensor<2x1x6x4xf32>, tensor<2x7x2x4xf32>, tensor<2x7x2x4xf32>) {
  %rq = tg.rope %q at %pos {rotary_dims = 2 : i64, max_position = 7 : i64} : tensor<2x1x6x4xf32>, tensor<2x1xi32>
  %rk = tg.rope %k at %pos {rotary_dims = 2 : i64, max_position = 7 : i64} : tensor<2x1x2x4xf32>, tensor<2x1xi32>
  %kc1 = tg.cache_update %kc, %rk at %pos : tensor<2x7x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1xi32>
  %vc1 = tg.cache_update %vc, %v at %pos : tensor<2x7x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1xi32>
  %o, %lse = tg.attention %rq, %kc1, %vc1 at %pos {causal, window = 3 : i64, softcap = 2.0 : f64} : tensor<2x1x6x4xf32>, tensor<2x7x2x4xf32>, tensor<2x7x2x4xf32>, tensor<2x1xi32> -> tensor<2x1x6x4xf32>, tensor<2x1x6xf32>
  return %o, %kc1, %vc1 : tensor<2x1x6x4xf32>, tensor<2x7x2x4xf32>, tensor<2x7x2x4xf32>
}
)mlir";

Tensor random(std::vector<int64_t> shape, std::mt19937 &rng) {
  Tensor t(std::move(shape));
  std::normal_distribution<double> normal;
  for (double &x : t.data)
    x = normal(rng);
  return t;
}

/// Rows [s, s+1) of the [B, S, H, D] `x`, as [B, 1, H, D].
Tensor token(const Tensor &x, int64_t s) {
  int64_t B = x.shape[0], S = x.shape[1], row = x.shape[2] * x.shape[3];
  Tensor out({B, 1, x.shape[2], x.shape[3]});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t e = 0; e < row; ++e)
      out[b * row + e] = x[(b * S + s) * row + e];
  return out;
}

TEST(GenerationOps, DecodeStepsEqualTheCausalForward) {
  MLIRContext context;
  context.loadDialect<tg::TGDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kIR, &context);
  ASSERT_TRUE(module);
  auto causal = module->lookupSymbol<func::FuncOp>("causal");
  auto step = module->lookupSymbol<func::FuncOp>("step");

  std::mt19937 rng(7);
  Tensor q = random({2, 7, 6, 4}, rng), k = random({2, 7, 2, 4}, rng),
         v = random({2, 7, 2, 4}, rng);
  auto full = tgc::ref::interpret(causal, {q, k, v});
  ASSERT_TRUE(static_cast<bool>(full)) << llvm::toString(full.takeError());

  // Caches start as junk; each step writes its position before reading.
  Tensor kc = random({2, 7, 2, 4}, rng), vc = random({2, 7, 2, 4}, rng);
  for (int64_t p = 0; p < 7; ++p) {
    Tensor pos({2, 1}, static_cast<double>(p));
    auto out = tgc::ref::interpret(
        step, {token(q, p), token(k, p), token(v, p), kc, vc, pos});
    ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
    kc = (*out)[1];
    vc = (*out)[2];
    Tensor expected = token((*full)[0], p);
    for (int64_t i = 0; i < expected.numElements(); ++i)
      EXPECT_NEAR((*out)[0][i], expected[i], 1e-12) << "position " << p;
  }
}

} // namespace
