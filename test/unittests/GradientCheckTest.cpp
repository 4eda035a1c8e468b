//===- GradientCheckTest.cpp - finite-difference checks of every rule -----===//
//
// For each differentiable op: a small f64 function whose loss is
// sum(op(params) * R) with a fixed random R, differentiated by tg-autodiff
// and run by the reference interpreter; every gradient entry checked (or a
// random sample of them) is compared with a central finite difference of
// the forward function.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Reference/Interpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using tgc::ref::Tensor;

namespace {

struct GradCase {
  const char *name;
  const char *ir;       // defines @forward returning tensor<f64>
  int64_t intBound = 4; // integer inputs are drawn from [0, intBound)
};

std::ostream &operator<<(std::ostream &os, const GradCase &c) {
  return os << c.name;
}

class GradientCheck : public ::testing::TestWithParam<GradCase> {};

/// Worst relative error seen per case, printed at the end for the record.
double worstRelativeError(double analytic, double numeric) {
  return std::fabs(analytic - numeric) /
         std::max(1e-3, std::max(std::fabs(analytic), std::fabs(numeric)));
}

TEST_P(GradientCheck, MatchesFiniteDifferences) {
  const GradCase &c = GetParam();
  MLIRContext context;
  context.loadDialect<tg::TGDialect, func::FuncDialect, arith::ArithDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(c.ir, &context);
  ASSERT_TRUE(module) << "case does not parse";
  PassManager pm(&context);
  pm.addPass(tg::createTGAutodiffPass());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(forward && step);

  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Tensor> args;
  std::vector<unsigned> params;
  for (BlockArgument arg : forward.getArguments()) {
    auto type = llvm::cast<RankedTensorType>(arg.getType());
    Tensor t(
        std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
    for (double &x : t.data)
      x = type.getElementType().isInteger()
              ? static_cast<double>(rng() % c.intBound)
              : normal(rng);
    if (forward.getArgAttr(arg.getArgNumber(), tg::TGDialect::kParamAttrName))
      params.push_back(arg.getArgNumber());
    args.push_back(std::move(t));
  }

  auto analytic = tgc::ref::interpret(step, args);
  ASSERT_TRUE(static_cast<bool>(analytic))
      << llvm::toString(analytic.takeError());
  ASSERT_EQ(analytic->size(), params.size() + 1);
  auto loss = tgc::ref::interpret(forward, args);
  ASSERT_TRUE(static_cast<bool>(loss)) << llvm::toString(loss.takeError());
  EXPECT_DOUBLE_EQ((*analytic)[0][0], (*loss)[0][0]) << "train_step's loss";

  const double h = 1e-5;
  double worst = 0;
  for (auto [i, p] : llvm::enumerate(params)) {
    const Tensor &grad = (*analytic)[i + 1];
    int64_t n = args[p].numElements();
    // Every entry of small tensors, a random sample of larger ones.
    std::vector<int64_t> entries;
    for (int64_t e = 0; e < n; ++e)
      entries.push_back(e);
    if (n > 48) {
      std::shuffle(entries.begin(), entries.end(), rng);
      entries.resize(48);
    }
    for (int64_t e : entries) {
      double saved = args[p][e];
      args[p][e] = saved + h;
      double up = (*tgc::ref::interpret(forward, args))[0][0];
      args[p][e] = saved - h;
      double down = (*tgc::ref::interpret(forward, args))[0][0];
      args[p][e] = saved;
      double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(grad[e], numeric, 1e-7 + 1e-6 * std::fabs(numeric))
          << "d loss / d "
          << forward
                 .getArgAttrOfType<StringAttr>(p, tg::TGDialect::kParamAttrName)
                 .getValue()
                 .str()
          << "[" << e << "]";
      worst = std::max(worst, worstRelativeError(grad[e], numeric));
    }
  }
  std::printf("[ gradcheck ] %-28s worst relative error %.2e\n", c.name, worst);
}

// The loss every case uses: a weighted sum with fixed random weights R.
#define LOSS(T, DIMS)                                                          \
  "  %m = tg.mul %y, %r : " T ", " T " -> " T "\n"                             \
  "  %l = tg.reduce_sum %m " DIMS " : " T " -> tensor<f64>\n"                  \
  "  return %l : tensor<f64>\n}\n"

const GradCase kCases[] = {
    {"linear_bias_3d",
     "func.func @forward(%x: tensor<2x3x4xf64> {tg.param = \"x\"}, %w: "
     "tensor<5x4xf64> {tg.param = \"w\"}, %b: tensor<5xf64> {tg.param = "
     "\"b\"}, %r: tensor<2x3x5xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.linear %x, %w, %b : tensor<2x3x4xf64>, tensor<5x4xf64>, "
     "tensor<5xf64> -> tensor<2x3x5xf64>\n" LOSS("tensor<2x3x5xf64>",
                                                 "[0, 1, 2]")},
    {"linear_2d", "func.func @forward(%x: tensor<3x4xf64> {tg.param = \"x\"}, "
                  "%w: tensor<2x4xf64> {tg.param = \"w\"}, %r: tensor<3x2xf64> "
                  "{tg.input = \"r\"}) -> tensor<f64> {\n"
                  "  %y = tg.linear %x, %w : tensor<3x4xf64>, tensor<2x4xf64> "
                  "-> tensor<3x2xf64>\n" LOSS("tensor<3x2xf64>", "[0, 1]")},
    {"matmul_batched",
     "func.func @forward(%a: tensor<2x3x4xf64> {tg.param = \"a\"}, %b: "
     "tensor<2x4x5xf64> {tg.param = \"b\"}, %r: tensor<2x3x5xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.matmul %a, %b : tensor<2x3x4xf64>, tensor<2x4x5xf64> -> "
     "tensor<2x3x5xf64>\n" LOSS("tensor<2x3x5xf64>", "[0, 1, 2]")},
    {"matmul_transpose_lhs",
     "func.func @forward(%a: tensor<2x4x3xf64> {tg.param = \"a\"}, %b: "
     "tensor<4x5xf64> {tg.param = \"b\"}, %r: tensor<2x3x5xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.matmul %a, %b {transpose_lhs} : tensor<2x4x3xf64>, "
     "tensor<4x5xf64> -> tensor<2x3x5xf64>\n" LOSS("tensor<2x3x5xf64>",
                                                   "[0, 1, 2]")},
    {"matmul_transpose_rhs_shared",
     "func.func @forward(%a: tensor<2x3x4xf64> {tg.param = \"a\"}, %b: "
     "tensor<5x4xf64> {tg.param = \"b\"}, %r: tensor<2x3x5xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.matmul %a, %b {transpose_rhs} : tensor<2x3x4xf64>, "
     "tensor<5x4xf64> -> tensor<2x3x5xf64>\n" LOSS("tensor<2x3x5xf64>",
                                                   "[0, 1, 2]")},
    {"matmul_transpose_both",
     "func.func @forward(%a: tensor<2x4x3xf64> {tg.param = \"a\"}, %b: "
     "tensor<2x5x4xf64> {tg.param = \"b\"}, %r: tensor<2x3x5xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.matmul %a, %b {transpose_lhs, transpose_rhs} : "
     "tensor<2x4x3xf64>, tensor<2x5x4xf64> -> tensor<2x3x5xf64>\n" LOSS(
         "tensor<2x3x5xf64>", "[0, 1, 2]")},
    {"matmul_shared_lhs",
     "func.func @forward(%a: tensor<3x4xf64> {tg.param = \"a\"}, %b: "
     "tensor<2x4x5xf64> {tg.param = \"b\"}, %r: tensor<2x3x5xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.matmul %a, %b : tensor<3x4xf64>, tensor<2x4x5xf64> -> "
     "tensor<2x3x5xf64>\n" LOSS("tensor<2x3x5xf64>", "[0, 1, 2]")},
    {"add_broadcast",
     "func.func @forward(%a: tensor<2x1x4xf64> {tg.param = \"a\"}, %b: "
     "tensor<3x1xf64> {tg.param = \"b\"}, %r: tensor<2x3x4xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.add %a, %b : tensor<2x1x4xf64>, tensor<3x1xf64> -> "
     "tensor<2x3x4xf64>\n" LOSS("tensor<2x3x4xf64>", "[0, 1, 2]")},
    {"sub_broadcast",
     "func.func @forward(%a: tensor<4xf64> {tg.param = \"a\"}, %b: "
     "tensor<2x3x4xf64> {tg.param = \"b\"}, %r: tensor<2x3x4xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.sub %a, %b : tensor<4xf64>, tensor<2x3x4xf64> -> "
     "tensor<2x3x4xf64>\n" LOSS("tensor<2x3x4xf64>", "[0, 1, 2]")},
    {"mul_broadcast_scalar",
     "func.func @forward(%a: tensor<2x3xf64> {tg.param = \"a\"}, %b: "
     "tensor<f64> {tg.param = \"b\"}, %r: tensor<2x3xf64> {tg.input = \"r\"}) "
     "-> tensor<f64> {\n"
     "  %y = tg.mul %a, %b : tensor<2x3xf64>, tensor<f64> -> "
     "tensor<2x3xf64>\n" LOSS("tensor<2x3xf64>", "[0, 1]")},
    {"mul_self", "func.func @forward(%a: tensor<2x3xf64> {tg.param = \"a\"}, "
                 "%r: tensor<2x3xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
                 "  %y = tg.mul %a, %a : tensor<2x3xf64>, tensor<2x3xf64> -> "
                 "tensor<2x3xf64>\n" LOSS("tensor<2x3xf64>", "[0, 1]")},
    {"scale",
     "func.func @forward(%a: tensor<2x3xf64> {tg.param = \"a\"}, %r: "
     "tensor<2x3xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.scale %a {factor = -0.75 : f64} : tensor<2x3xf64>\n" LOSS(
         "tensor<2x3xf64>", "[0, 1]")},
    {"relu",
     "func.func @forward(%a: tensor<4x5xf64> {tg.param = \"a\"}, %r: "
     "tensor<4x5xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.relu %a : tensor<4x5xf64>\n" LOSS("tensor<4x5xf64>", "[0, 1]")},
    {"gelu_erf",
     "func.func @forward(%a: tensor<4x5xf64> {tg.param = \"a\"}, %r: "
     "tensor<4x5xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.gelu %a : tensor<4x5xf64>\n" LOSS("tensor<4x5xf64>", "[0, 1]")},
    {"gelu_tanh",
     "func.func @forward(%a: tensor<4x5xf64> {tg.param = \"a\"}, %r: "
     "tensor<4x5xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.gelu %a {approximate = \"tanh\"} : tensor<4x5xf64>\n" LOSS(
         "tensor<4x5xf64>", "[0, 1]")},
    {"sigmoid",
     "func.func @forward(%a: tensor<4x5xf64> {tg.param = \"a\"}, %r: "
     "tensor<4x5xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.sigmoid %a : tensor<4x5xf64>\n" LOSS("tensor<4x5xf64>", "[0, 1]")},
    {"silu",
     "func.func @forward(%a: tensor<4x5xf64> {tg.param = \"a\"}, %r: "
     "tensor<4x5xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.silu %a : tensor<4x5xf64>\n" LOSS("tensor<4x5xf64>", "[0, 1]")},
    {"softmax_last",
     "func.func @forward(%a: tensor<3x5xf64> {tg.param = \"a\"}, %r: "
     "tensor<3x5xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.softmax %a axis -1 : tensor<3x5xf64>\n" LOSS("tensor<3x5xf64>",
                                                             "[0, 1]")},
    {"softmax_first",
     "func.func @forward(%a: tensor<3x2x4xf64> {tg.param = \"a\"}, %r: "
     "tensor<3x2x4xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.softmax %a axis 0 : tensor<3x2x4xf64>\n" LOSS(
         "tensor<3x2x4xf64>", "[0, 1, 2]")},
    {"embedding_repeated_ids",
     "func.func @forward(%t: tensor<5x3xf64> {tg.param = \"t\"}, %ids: "
     "tensor<2x4xi32> {tg.input = \"ids\"}, %r: tensor<2x4x3xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.embedding %t, %ids : tensor<5x3xf64>, tensor<2x4xi32> -> "
     "tensor<2x4x3xf64>\n" LOSS("tensor<2x4x3xf64>", "[0, 1, 2]"),
     5},
    {"rms_norm", "func.func @forward(%x: tensor<2x3x6xf64> {tg.param = \"x\"}, "
                 "%w: tensor<6xf64> {tg.param = \"w\"}, %r: tensor<2x3x6xf64> "
                 "{tg.input = \"r\"}) -> tensor<f64> {\n"
                 "  %y = tg.rms_norm %x, %w {eps = 1.0e-5 : f64} : "
                 "tensor<2x3x6xf64>, tensor<6xf64> -> tensor<2x3x6xf64>\n" LOSS(
                     "tensor<2x3x6xf64>", "[0, 1, 2]")},
    {"layer_norm_bias",
     "func.func @forward(%x: tensor<4x6xf64> {tg.param = \"x\"}, %w: "
     "tensor<6xf64> {tg.param = \"w\"}, %b: tensor<6xf64> {tg.param = \"b\"}, "
     "%r: tensor<4x6xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.layer_norm %x, %w, %b : tensor<4x6xf64>, tensor<6xf64>, "
     "tensor<6xf64> -> tensor<4x6xf64>\n" LOSS("tensor<4x6xf64>", "[0, 1]")},
    {"layer_norm_no_bias",
     "func.func @forward(%x: tensor<4x6xf64> {tg.param = \"x\"}, %w: "
     "tensor<6xf64> {tg.param = \"w\"}, %r: tensor<4x6xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.layer_norm %x, %w {eps = 1.0e-3 : f64} : tensor<4x6xf64>, "
     "tensor<6xf64> -> tensor<4x6xf64>\n" LOSS("tensor<4x6xf64>", "[0, 1]")},
    {"rope",
     "func.func @forward(%x: tensor<2x5x3x4xf64> {tg.param = \"x\"}, %r: "
     "tensor<2x5x3x4xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.rope %x {theta = 100.0 : f64} : tensor<2x5x3x4xf64>\n" LOSS(
         "tensor<2x5x3x4xf64>", "[0, 1, 2, 3]")},
    {"rope_frequencies",
     "func.func @forward(%x: tensor<2x7x3x6xf64> {tg.param = \"x\"}, %r: "
     "tensor<2x7x3x6xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.rope %x {frequencies = array<f64: 0.9, 0.031, 0.0007>} : "
     "tensor<2x7x3x6xf64>\n" LOSS("tensor<2x7x3x6xf64>", "[0, 1, 2, 3]")},
    {"rope_partial",
     "func.func @forward(%x: tensor<2x5x3x7xf64> {tg.param = \"x\"}, %r: "
     "tensor<2x5x3x7xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.rope %x {theta = 50.0 : f64, rotary_dims = 4 : i64} : "
     "tensor<2x5x3x7xf64>\n" LOSS("tensor<2x5x3x7xf64>", "[0, 1, 2, 3]")},
    {"rope_partial_frequencies",
     "func.func @forward(%x: tensor<1x6x2x8xf64> {tg.param = \"x\"}, %r: "
     "tensor<1x6x2x8xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.rope %x {frequencies = array<f64: 0.7, 0.02>, rotary_dims = "
     "4 : i64} : tensor<1x6x2x8xf64>\n" LOSS("tensor<1x6x2x8xf64>",
                                             "[0, 1, 2, 3]")},
    {"rms_norm_per_head",
     "func.func @forward(%x: tensor<2x3x5x4xf64> {tg.param = \"x\"}, %w: "
     "tensor<4xf64> {tg.param = \"w\"}, %r: tensor<2x3x5x4xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %y = tg.rms_norm %x, %w {eps = 1.0e-3 : f64} : tensor<2x3x5x4xf64>, "
     "tensor<4xf64> -> tensor<2x3x5x4xf64>\n" LOSS("tensor<2x3x5x4xf64>",
                                                    "[0, 1, 2, 3]")},
    {"rope_inverse",
     "func.func @forward(%x: tensor<1x4x2x6xf64> {tg.param = \"x\"}, %r: "
     "tensor<1x4x2x6xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y = tg.rope %x {inverse} : tensor<1x4x2x6xf64>\n" LOSS(
         "tensor<1x4x2x6xf64>", "[0, 1, 2, 3]")},
    {"attention_causal_mha",
     "func.func @forward(%q: tensor<2x4x2x3xf64> {tg.param = \"q\"}, %k: "
     "tensor<2x4x2x3xf64> {tg.param = \"k\"}, %v: tensor<2x4x2x3xf64> "
     "{tg.param = \"v\"}, %r: tensor<2x4x2x3xf64> {tg.input = \"r\"}) -> "
     "tensor<f64> {\n"
     "  %y, %lse = tg.attention %q, %k, %v {causal} : tensor<2x4x2x3xf64>, "
     "tensor<2x4x2x3xf64>, tensor<2x4x2x3xf64> -> tensor<2x4x2x3xf64>, "
     "tensor<2x4x2xf64>\n" LOSS("tensor<2x4x2x3xf64>", "[0, 1, 2, 3]")},
    {"attention_causal_gqa",
     "func.func @forward(%q: tensor<1x5x4x2xf64> {tg.param = \"q\"}, %k: "
     "tensor<1x5x2x2xf64> {tg.param = \"k\"}, %v: tensor<1x5x2x2xf64> "
     "{tg.param = \"v\"}, %r: tensor<1x5x4x2xf64> {tg.input = \"r\"}) -> "
     "tensor<f64> {\n"
     "  %y, %lse = tg.attention %q, %k, %v {causal} : tensor<1x5x4x2xf64>, "
     "tensor<1x5x2x2xf64>, tensor<1x5x2x2xf64> -> tensor<1x5x4x2xf64>, "
     "tensor<1x5x4xf64>\n" LOSS("tensor<1x5x4x2xf64>", "[0, 1, 2, 3]")},
    {"attention_window_gqa",
     "func.func @forward(%q: tensor<2x7x3x2xf64> {tg.param = \"q\"}, %k: "
     "tensor<2x7x1x2xf64> {tg.param = \"k\"}, %v: tensor<2x7x1x2xf64> "
     "{tg.param = \"v\"}, %r: tensor<2x7x3x2xf64> {tg.input = \"r\"}) -> "
     "tensor<f64> {\n"
     "  %y, %lse = tg.attention %q, %k, %v {causal, window = 3 : i64} : "
     "tensor<2x7x3x2xf64>, tensor<2x7x1x2xf64>, tensor<2x7x1x2xf64> -> "
     "tensor<2x7x3x2xf64>, tensor<2x7x3xf64>\n" LOSS("tensor<2x7x3x2xf64>",
                                                     "[0, 1, 2, 3]")},
    {"attention_softcap_window_gqa",
     "func.func @forward(%q: tensor<2x7x3x2xf64> {tg.param = \"q\"}, %k: "
     "tensor<2x7x1x2xf64> {tg.param = \"k\"}, %v: tensor<2x7x1x2xf64> "
     "{tg.param = \"v\"}, %r: tensor<2x7x3x2xf64> {tg.input = \"r\"}) -> "
     "tensor<f64> {\n"
     "  %y, %lse = tg.attention %q, %k, %v {causal, window = 4 : i64, "
     "softcap = 0.6 : f64} : "
     "tensor<2x7x3x2xf64>, tensor<2x7x1x2xf64>, tensor<2x7x1x2xf64> -> "
     "tensor<2x7x3x2xf64>, tensor<2x7x3xf64>\n" LOSS("tensor<2x7x3x2xf64>",
                                                     "[0, 1, 2, 3]")},
    {"attention_softcap_full",
     "func.func @forward(%q: tensor<1x3x2x4xf64> {tg.param = \"q\"}, %k: "
     "tensor<1x5x1x4xf64> {tg.param = \"k\"}, %v: tensor<1x5x1x4xf64> "
     "{tg.param = \"v\"}, %r: tensor<1x3x2x4xf64> {tg.input = \"r\"}) -> "
     "tensor<f64> {\n"
     "  %y, %lse = tg.attention %q, %k, %v {scale = 1.7 : f64, softcap = 1.1 "
     ": f64} : "
     "tensor<1x3x2x4xf64>, tensor<1x5x1x4xf64>, tensor<1x5x1x4xf64> -> "
     "tensor<1x3x2x4xf64>, tensor<1x3x2xf64>\n" LOSS("tensor<1x3x2x4xf64>",
                                                     "[0, 1, 2, 3]")},
    {"attention_full_scaled",
     "func.func @forward(%q: tensor<1x3x2x4xf64> {tg.param = \"q\"}, %k: "
     "tensor<1x5x1x4xf64> {tg.param = \"k\"}, %v: tensor<1x5x1x4xf64> "
     "{tg.param = \"v\"}, %r: tensor<1x3x2x4xf64> {tg.input = \"r\"}) -> "
     "tensor<f64> {\n"
     "  %y, %lse = tg.attention %q, %k, %v {scale = 0.3 : f64} : "
     "tensor<1x3x2x4xf64>, tensor<1x5x1x4xf64>, tensor<1x5x1x4xf64> -> "
     "tensor<1x3x2x4xf64>, tensor<1x3x2xf64>\n" LOSS("tensor<1x3x2x4xf64>",
                                                     "[0, 1, 2, 3]")},
    {"cross_entropy_ignore",
     "func.func @forward(%x: tensor<2x4x5xf64> {tg.param = \"x\"}, %t: "
     "tensor<2x4xi64> {tg.input = \"t\"}) -> tensor<f64> {\n"
     "  %l = tg.cross_entropy %x, %t {ignore_index = 0 : i64} : "
     "tensor<2x4x5xf64>, tensor<2x4xi64> -> tensor<f64>\n"
     "  return %l : tensor<f64>\n}\n",
     5},
    {"cross_entropy_softcap",
     "func.func @forward(%x: tensor<2x4x5xf64> {tg.param = \"x\"}, %t: "
     "tensor<2x4xi64> {tg.input = \"t\"}) -> tensor<f64> {\n"
     "  %l = tg.cross_entropy %x, %t {ignore_index = 0 : i64, softcap = 0.8 "
     ": f64} : tensor<2x4x5xf64>, tensor<2x4xi64> -> tensor<f64>\n"
     "  return %l : tensor<f64>\n}\n",
     5},
    {"linear_cross_entropy_softcap",
     "func.func @forward(%x: tensor<2x3x4xf64> {tg.param = \"x\"}, %w: "
     "tensor<5x4xf64> {tg.param = \"w\"}, %b: tensor<5xf64> {tg.param = "
     "\"b\"}, %t: tensor<2x3xi64> {tg.input = \"t\"}) -> tensor<f64> {\n"
     "  %l, %dx, %dw, %db = tg.linear_cross_entropy %x, %w, %t bias(%b : "
     "tensor<5xf64>) {chunk_rows = 4 : i64, softcap = 0.9 : f64} : "
     "tensor<2x3x4xf64>, tensor<5x4xf64>, tensor<2x3xi64> -> tensor<f64>, "
     "tensor<2x3x4xf64>, tensor<5x4xf64>, tensor<5xf64>\n"
     "  return %l : tensor<f64>\n}\n",
     5},
    {"linear_cross_entropy_bias",
     "func.func @forward(%x: tensor<2x3x4xf64> {tg.param = \"x\"}, %w: "
     "tensor<5x4xf64> {tg.param = \"w\"}, %b: tensor<5xf64> {tg.param = "
     "\"b\"}, %t: tensor<2x3xi64> {tg.input = \"t\"}) -> tensor<f64> {\n"
     "  %l, %dx, %dw, %db = tg.linear_cross_entropy %x, %w, %t bias(%b : "
     "tensor<5xf64>) {chunk_rows = 4 : i64, ignore_index = 2 : i64} : "
     "tensor<2x3x4xf64>, tensor<5x4xf64>, tensor<2x3xi64> -> tensor<f64>, "
     "tensor<2x3x4xf64>, tensor<5x4xf64>, tensor<5xf64>\n"
     "  return %l : tensor<f64>\n}\n",
     5},
    {"linear_cross_entropy",
     "func.func @forward(%x: tensor<3x4xf64> {tg.param = \"x\"}, %w: "
     "tensor<6x4xf64> {tg.param = \"w\"}, %t: tensor<3xi64> {tg.input = "
     "\"t\"}) -> tensor<f64> {\n"
     "  %l, %dx, %dw = tg.linear_cross_entropy %x, %w, %t {chunk_rows = 2 : "
     "i64} : tensor<3x4xf64>, tensor<6x4xf64>, tensor<3xi64> -> tensor<f64>, "
     "tensor<3x4xf64>, tensor<6x4xf64>\n"
     "  return %l : tensor<f64>\n}\n",
     6},
    {"structure_ops",
     "func.func @forward(%a: tensor<2x6xf64> {tg.param = \"a\"}, %r: "
     "tensor<3x2x3xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %s = tg.slice %a axis 1 start 1 size 4 : tensor<2x6xf64> -> "
     "tensor<2x4xf64>\n"
     "  %rs = tg.reshape %s : tensor<2x4xf64> -> tensor<2x2x2xf64>\n"
     "  %t = tg.transpose %rs [2, 0, 1] : tensor<2x2x2xf64> -> "
     "tensor<2x2x2xf64>\n"
     "  %k = tg.reduce_sum %t [1] {keep_dims} : tensor<2x2x2xf64> -> "
     "tensor<2x1x2xf64>\n"
     "  %d = tg.reduce_sum %a [1] : tensor<2x6xf64> -> tensor<2xf64>\n"
     "  %d2 = tg.reshape %d : tensor<2xf64> -> tensor<2x1xf64>\n"
     "  %k2 = tg.reshape %k : tensor<2x1x2xf64> -> tensor<2x2xf64>\n"
     "  %e = tg.add %k2, %d2 : tensor<2x2xf64>, tensor<2x1xf64> -> "
     "tensor<2x2xf64>\n"
     "  %e2 = tg.pad %e axis 1 low 0 high 1 : tensor<2x2xf64> -> "
     "tensor<2x3xf64>\n"
     "  %y = tg.broadcast %e2 : tensor<2x3xf64> -> tensor<3x2x3xf64>\n" LOSS(
         "tensor<3x2x3xf64>", "[0, 1, 2]")},
    // Mixture of experts: the routing weights' gradient into the logits
    // (renormalised or not), and a whole dropless block: rows gathered by
    // expert, grouped products both ways, results combined by weight.
    {"route_top2_normalized",
     "func.func @forward(%a: tensor<7x5xf64> {tg.param = \"a\"}, %r: "
     "tensor<7x2xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y, %e = tg.route %a {top_k = 2 : i64, normalize} : tensor<7x5xf64> "
     "-> tensor<7x2xf64>, tensor<7x2xi32>\n" LOSS("tensor<7x2xf64>",
                                                 "[0, 1]")},
    {"route_top3",
     "func.func @forward(%a: tensor<3x2x7xf64> {tg.param = \"a\"}, %r: "
     "tensor<3x2x3xf64> {tg.input = \"r\"}) -> tensor<f64> {\n"
     "  %y, %e = tg.route %a {top_k = 3 : i64} : tensor<3x2x7xf64> -> "
     "tensor<3x2x3xf64>, tensor<3x2x3xi32>\n" LOSS("tensor<3x2x3xf64>",
                                                  "[0, 1, 2]")},
    {"moe_block",
     "func.func @forward(%x: tensor<5x4xf64> {tg.param = \"x\"}, %gate: "
     "tensor<3x4xf64> {tg.param = \"gate\"}, %w0: tensor<6x4xf64> {tg.param "
     "= \"w0\"}, %w1: tensor<6x4xf64> {tg.param = \"w1\"}, %w2: "
     "tensor<6x4xf64> {tg.param = \"w2\"}, %v0: tensor<6x4xf64> {tg.param = "
     "\"v0\"}, %v1: tensor<6x4xf64> {tg.param = \"v1\"}, %v2: "
     "tensor<6x4xf64> {tg.param = \"v2\"}, %r: tensor<5x4xf64> {tg.input = "
     "\"r\"}) -> tensor<f64> {\n"
     "  %g = tg.linear %x, %gate : tensor<5x4xf64>, tensor<3x4xf64> -> "
     "tensor<5x3xf64>\n"
     "  %w, %e = tg.route %g {top_k = 2 : i64, normalize} : tensor<5x3xf64> "
     "-> tensor<5x2xf64>, tensor<5x2xi32>\n"
     "  %rows, %pos, %off = tg.expert_dispatch %e {num_experts = 3 : i64} : "
     "tensor<5x2xi32> -> tensor<10xi32>, tensor<5x2xi32>, tensor<4xi32>\n"
     "  %xs = tg.embedding %x, %rows : tensor<5x4xf64>, tensor<10xi32> -> "
     "tensor<10x4xf64>\n"
     "  %h = tg.grouped_matmul %xs, %off, %w0, %w1, %w2 {transpose_weights} "
     ": tensor<10x4xf64>, tensor<4xi32>, tensor<6x4xf64>, tensor<6x4xf64>, "
     "tensor<6x4xf64> -> tensor<10x6xf64>\n"
     "  %a = tg.silu %h : tensor<10x6xf64>\n"
     "  %ys = tg.grouped_matmul %a, %off, %v0, %v1, %v2 : tensor<10x6xf64>, "
     "tensor<4xi32>, tensor<6x4xf64>, tensor<6x4xf64>, tensor<6x4xf64> -> "
     "tensor<10x4xf64>\n"
     "  %yk = tg.embedding %ys, %pos : tensor<10x4xf64>, tensor<5x2xi32> -> "
     "tensor<5x2x4xf64>\n"
     "  %w3 = tg.reshape %w : tensor<5x2xf64> -> tensor<5x2x1xf64>\n"
     "  %p = tg.mul %yk, %w3 : tensor<5x2x4xf64>, tensor<5x2x1xf64> -> "
     "tensor<5x2x4xf64>\n"
     "  %y = tg.reduce_sum %p [1] : tensor<5x2x4xf64> -> tensor<5x4xf64>\n" LOSS(
         "tensor<5x4xf64>", "[0, 1]")},
};

INSTANTIATE_TEST_SUITE_P(Rules, GradientCheck, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GradCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
