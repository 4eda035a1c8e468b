//===- GenerationGraphTest.cpp - the front end's generation programs ------===//
//
// tgc --program=generate builds @prefill (a prompt chunk) and @decode (one
// token) over KV caches. In the reference interpreter, feeding a sequence
// through them must give the logits the training forward computes at every
// position: decode steps one position at a time, and a prefill chunk at its
// last position. Checked per family on the e2e tests' awkward configs
// (GQA, windows shorter than the sequence, soft caps, partial RoPE,
// learned positions, parallel residuals, q/k norms).
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Frontend/MLIRGen.h"
#include "tgc/Frontend/ModelConfig.h"
#include "tgc/Reference/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using tgc::ref::Tensor;

namespace {

// Longer than the qwen2, gemma2 and gemma3 windows (37, 23, 19): they bite.
constexpr int64_t kSeq = 41, kChunk = 7;

Tensor randomLike(RankedTensorType type, std::mt19937 &rng, double scale) {
  Tensor t(std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
  std::normal_distribution<double> normal(0.0, scale);
  for (double &x : t.data)
    x = normal(rng);
  return t;
}

/// @forward returning the logits its loss reads ([1, S, V]).
void returnLogits(func::FuncOp forward) {
  Value logits;
  forward.walk([&](tg::CrossEntropyOp loss) { logits = loss.getLogits(); });
  ASSERT_TRUE(logits);
  Operation *ret = forward.getBody().front().getTerminator();
  ret->setOperands(logits);
  forward.setType(FunctionType::get(forward.getContext(),
                                    forward.getArgumentTypes(),
                                    {logits.getType()}));
  forward.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
}

double maxAbs(const std::vector<double> &v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::abs(x));
  return m;
}

class GenerationGraph : public ::testing::TestWithParam<const char *> {};

TEST_P(GenerationGraph, StepsThroughTheCachesGiveTheForwardsLogits) {
  std::string path = std::string(TGC_E2E_INPUTS) + "/" + GetParam();
  llvm::Expected<tgc::ModelConfig> loaded = tgc::loadModelConfig(path);
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  tgc::ModelConfig config = *loaded;
  config.training.batchSize = 1;
  config.training.seqLen = kSeq;

  MLIRContext context;
  OwningOpRef<ModuleOp> forwardModule =
      tgc::buildForwardModule(context, config);
  OwningOpRef<ModuleOp> generation = tgc::buildGenerationModule(
      context, config, kSeq, {{"prefill", kChunk}, {"decode", 1}});
  ASSERT_TRUE(succeeded(verify(*generation)));
  auto forward = forwardModule->lookupSymbol<func::FuncOp>("forward");
  returnLogits(forward);
  auto prefill = generation->lookupSymbol<func::FuncOp>("prefill");
  auto decode = generation->lookupSymbol<func::FuncOp>("decode");

  // Parameters, then ids; the same parameters feed both programs.
  std::mt19937 rng(11);
  std::vector<Tensor> params;
  for (BlockArgument arg : forward.getArguments())
    if (forward.getArgAttr(arg.getArgNumber(), tg::TGDialect::kParamAttrName))
      params.push_back(randomLike(llvm::cast<RankedTensorType>(arg.getType()),
                                  rng, 0.4));
  Tensor ids({1, kSeq});
  std::uniform_int_distribution<int64_t> token(0, config.vocabSize - 1);
  for (double &id : ids.data)
    id = static_cast<double>(token(rng));
  std::vector<Tensor> forwardArgs = params;
  forwardArgs.push_back(ids);
  forwardArgs.push_back(ids); // targets: unread
  auto reference = tgc::ref::interpret(forward, forwardArgs);
  ASSERT_TRUE(static_cast<bool>(reference))
      << llvm::toString(reference.takeError());
  const Tensor &logits = (*reference)[0];
  int64_t V = config.vocabSize;
  auto logitsAt = [&](int64_t p) {
    return std::vector<double>(logits.data.begin() + p * V,
                               logits.data.begin() + (p + 1) * V);
  };

  // Caches of junk: each step writes a position before any read of it.
  std::vector<Tensor> caches;
  size_t firstCache = params.size() + 2;
  for (unsigned i = firstCache; i < decode.getNumArguments(); ++i)
    caches.push_back(randomLike(
        llvm::cast<RankedTensorType>(decode.getArgument(i).getType()), rng,
        5.0));
  auto run = [&](func::FuncOp step, int64_t first, int64_t count) {
    Tensor stepIds({1, count}), positions({1, count});
    for (int64_t i = 0; i < count; ++i) {
      stepIds[i] = ids[first + i];
      positions[i] = static_cast<double>(first + i);
    }
    std::vector<Tensor> args = params;
    args.push_back(stepIds);
    args.push_back(positions);
    args.insert(args.end(), caches.begin(), caches.end());
    auto out = tgc::ref::interpret(step, args);
    EXPECT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
    caches.assign(out->begin() + 1, out->end());
    return (*out)[0].data;
  };
  auto expectClose = [&](const std::vector<double> &got, int64_t p) {
    std::vector<double> want = logitsAt(p);
    double scale = maxAbs(want), worst = 0;
    for (int64_t v = 0; v < V; ++v)
      worst = std::max(worst, std::abs(got[v] - want[v]));
    EXPECT_LE(worst, 1e-10 * scale) << GetParam() << " at position " << p;
  };

  // A prefill chunk, then decode steps to the end of the cache.
  expectClose(run(prefill, 0, kChunk), kChunk - 1);
  for (int64_t p = kChunk; p < kSeq; ++p)
    expectClose(run(decode, p, 1), p);
}

INSTANTIATE_TEST_SUITE_P(
    Families, GenerationGraph,
    ::testing::Values("llama-awkward.json", "mistral-window.json", "qwen2-window.json",
                      "qwen2-awkward.json", "qwen3-awkward.json",
                      "gemma-awkward.json", "gemma2-awkward.json",
                      "gemma3-awkward.json", "olmo2-awkward.json",
                      "phi3-partial.json", "neox-awkward.json",
                      "gpt2-vocab50257.json"),
    [](const ::testing::TestParamInfo<const char *> &info) {
      std::string name = info.param;
      name = name.substr(0, name.find('.'));
      for (char &c : name)
        if (!isalnum(static_cast<unsigned char>(c)))
          c = '_';
      return name;
    });

} // namespace
