//===- FusedLoss.cpp - tg.linear_cross_entropy → chunked linalg -----------===//
//
// The vocabulary projection, the loss and its gradients over row chunks: an
// scf.for over chunks of `chunk_rows` rows (the last, shorter chunk straight
// after it, so every shape stays static); each chunk's logits are computed,
// reduced into the loss, turned into their gradient, multiplied into the
// input and weight gradients (those the step reads), and dropped.
//
// A chunk's logits are kept vocabulary-major, Lᵀ [V, rows] = W · xᵀ: all
// three products then read the weight [V, D] as it is stored (W · xᵀ for the
// logits, (dLᵀ)ᵀ · W for dx, dLᵀ · x for dW), and only the chunk's [rows, D]
// input is transposed. The
// row-major layout needs Wᵀ, a whole-weight copy (250 MiB for a 32000-word
// vocabulary at D 2048) alive across the loss.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;

namespace {

/// The fused op's operands, flattened to rows.
struct FusedOperands {
  Value input;   // [N, D]
  Value targets; // [N]
  Value weight;  // [V, D]
  Value bias;    // [V] or null
  int64_t rows, dim, vocab, chunk;
  std::optional<int64_t> ignore;
  std::optional<double> softcap;
  Type elt;
};

FusedOperands flatten(OpBuilder &b, Location loc, Value input, Value weight,
                      Value bias, Value targets, std::optional<int64_t> ignore,
                      int64_t chunkRows) {
  FusedOperands f;
  RankedTensorType w = tensorType(weight);
  f.vocab = w.getDimSize(0);
  f.dim = w.getDimSize(1);
  f.elt = w.getElementType();
  f.rows = tensorType(input).getNumElements() / f.dim;
  f.chunk = std::max<int64_t>(1, std::min(chunkRows, f.rows));
  f.input =
      reshape(b, loc, input, RankedTensorType::get({f.rows, f.dim}, f.elt));
  f.targets = reshape(
      b, loc, targets,
      RankedTensorType::get({f.rows}, tensorType(targets).getElementType()));
  f.weight = weight;
  f.bias = bias;
  f.ignore = ignore;
  return f;
}

/// The [V, size] logits of one chunk of rows `x` ([size, D]), soft-capped
/// in place where the op caps them.
Value chunkLogits(OpBuilder &b, Location loc, const FusedOperands &f, Value x,
                  int64_t size) {
  auto type = RankedTensorType::get({f.vocab, size}, f.elt);
  MLIRContext *ctx = b.getContext();
  Value init =
      f.bias ? generic(b, loc, f.bias, dimsMap(ctx, 2, {0}),
                       tensor::EmptyOp::create(b, loc, type.getShape(), f.elt),
                       dimsMap(ctx, 2, {0, 1}), iterators(2), first)
             : filled(b, loc, type, 0.0);
  Value logits = matmul2D(b, loc, f.weight, transpose2D(b, loc, x), init);
  if (!f.softcap)
    return logits;
  AffineMap full = dimsMap(ctx, 2, {0, 1});
  return generic(b, loc, {}, {}, logits, full, iterators(2),
                 [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                   return softcapped(nb, nl, a[0], *f.softcap);
                 });
}

/// One chunk's loss sum (0-d) and logits gradient [V, rows], with a single
/// [V, rows] buffer: the exponentials and then the gradient are written over
/// the logits (parallel loops, which vectorise along the rows; the per-row
/// max and sum are the only reductions). Soft-capped logits are kept for
/// the cap's slope: the exponentials then get a buffer of their own.
struct ChunkLoss {
  Value sum, dlogits;
};

ChunkLoss chunkLoss(OpBuilder &b, Location loc, const FusedOperands &f,
                    Value logits, Value targets, Value count) {
  MLIRContext *ctx = b.getContext();
  int64_t rows = tensorType(logits).getDimSize(1);
  auto rowType = RankedTensorType::get({rows}, f.elt);
  AffineMap full = dimsMap(ctx, 2, {0, 1}), row2 = dimsMap(ctx, 2, {1});
  AffineMap row1 = dimsMap(ctx, 1, {0});
  Value max =
      reduceAxis(b, loc, logits, 0, -std::numeric_limits<double>::infinity(),
                 [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                   return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
                 });
  // The target's logit, read before the logits are overwritten.
  Value picked = generic(
      b, loc, targets, row1, tensor::EmptyOp::create(b, loc, {rows}, f.elt),
      row1, iterators(1),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value r = linalg::IndexOp::create(nb, l, 0);
        return tensor::ExtractOp::create(
            nb, l, logits, ValueRange{clampIndex(nb, l, a[0], f.vocab), r});
      });
  // exp(logit − max): over the logits, or reading them into a tile of its
  // own where they are kept.
  auto exp = [](OpBuilder &nb, Location l, ValueRange a) -> Value {
    return math::ExpOp::create(nb, l, subF(nb, l, a[1], a[0]));
  };
  Value exps =
      f.softcap
          ? generic(b, loc, {max, logits}, {row2, full},
                    tensor::EmptyOp::create(
                        b, loc, tensorType(logits).getShape(), f.elt),
                    full, iterators(2), exp)
          : generic(b, loc, max, row2, logits, full, iterators(2), exp);
  Value sumExp = generic(b, loc, exps, full, filled(b, loc, rowType, 0.0), row2,
                         iterators(2, {0}), sumOf(first));
  // Σ_rows [not ignored] (log Σexp + max − logit[target]).
  Value zero = filled(b, loc, RankedTensorType::get({}, f.elt), 0.0);
  Value sum = generic(
      b, loc, {targets, max, sumExp, picked}, {row1, row1, row1, row1}, zero,
      AffineMap::get(1, 0, {}, ctx), iterators(1, {0}),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value nll = subF(
            nb, l, addF(nb, l, math::LogOp::create(nb, l, a[2]), a[1]), a[3]);
        return addF(
            nb, l, a[4],
            arith::SelectOp::create(nb, l, isIgnored(nb, l, a[0], f.ignore),
                                    constantFloat(nb, l, f.elt, 0.0), nll));
      });
  // (softmax − onehot) / count, zero on ignored rows, over the exponentials.
  AffineMap scalar = AffineMap::get(2, 0, {}, ctx);
  SmallVector<Value> inputs{targets, sumExp, count};
  SmallVector<AffineMap> maps{row2, row2, scalar};
  if (f.softcap) {
    inputs.push_back(logits);
    maps.push_back(full);
  }
  Value dlogits = generic(
      b, loc, inputs, maps, exps, full, iterators(2),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value d = lossGradElement(nb, l, divF(nb, l, a.back(), a[1]), a[0],
                                  f.vocab, /*grad=*/Value(), a[2], f.ignore,
                                  /*classDim=*/0);
        return f.softcap
                   ? mulF(nb, l, d, softcapSlope(nb, l, a[3], *f.softcap))
                   : d;
      });
  return {sum, dlogits};
}

struct LinearCrossEntropyLowering : OpConversionPattern<LinearCrossEntropyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LinearCrossEntropyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    FusedOperands f =
        flatten(rewriter, loc, adaptor.getInput(), adaptor.getWeight(),
                adaptor.getBias(), adaptor.getTargets(), op.getIgnoreIndex(),
                op.getChunkRows());
    f.softcap = softcapOf(op);
    RankedTensorType lossType = op.getResult().getType();
    Value count = targetCount(rewriter, loc, f.targets, f.ignore, f.elt);
    auto inputType = RankedTensorType::get({f.rows, f.dim}, f.elt);
    // A gradient nothing reads is not computed: a frozen weight's (or
    // bias's), the input's when nothing below the head trains.
    bool inputGrad = !op.getInputGrad().use_empty();
    bool weightGrad = !op.getWeightGrad().use_empty();
    bool biasGrad = f.bias && !op.getBiasGrad().use_empty();
    SmallVector<Value> init{filled(rewriter, loc, lossType, 0.0)};
    if (inputGrad)
      init.push_back(
          tensor::EmptyOp::create(rewriter, loc, inputType.getShape(), f.elt));
    if (weightGrad)
      init.push_back(filled(rewriter, loc, tensorType(f.weight), 0.0));
    if (biasGrad)
      init.push_back(filled(rewriter, loc, tensorType(f.bias), 0.0));
    AffineMap scalar = AffineMap::get(0, 0, {}, ctx);
    SmallVector<Value> results = forEachChunk(
        rewriter, loc, f.rows, f.chunk, init,
        [&](OpBuilder &b, Location l, OpFoldResult offset, int64_t size,
            ValueRange args) -> SmallVector<Value> {
          Value x = sliceDim(b, l, 0, f.input, offset, size);
          Value t = sliceDim(b, l, 0, f.targets, offset, size);
          ChunkLoss c =
              chunkLoss(b, l, f, chunkLogits(b, l, f, x, size), t, count);
          Value total = generic(b, l, c.sum, scalar, args[0], scalar, {},
                                [](OpBuilder &nb, Location nl, ValueRange a) {
                                  return addF(nb, nl, a[1], a[0]);
                                });
          Value dlogitsT = c.dlogits; // [V, size]
          SmallVector<Value> next{total};
          unsigned arg = 1;
          // dx rows = dlogits · W, computed in their rows of dx.
          if (inputGrad)
            next.push_back(computeIntoSlice(
                b, l, 0, args[arg++], offset, size, [&](Value zeroed) {
                  return matmulTransposedLhs(b, l, dlogitsT, f.weight, zeroed);
                }));
          // dW += dlogitsᵀ · x.
          if (weightGrad)
            next.push_back(matmul2D(b, l, dlogitsT, x, args[arg++]));
          if (biasGrad)
            next.push_back(generic(b, l, dlogitsT, dimsMap(ctx, 2, {0, 1}),
                                   args[arg++], dimsMap(ctx, 2, {0}),
                                   iterators(2, {1}), sumOf(first)));
          return next;
        });
    Value mean = elementwise(rewriter, loc, lossType, {results[0], count},
                             [](OpBuilder &b, Location l, ValueRange a) {
                               return divF(b, l, a[0], a[1]);
                             });
    // Results nothing reads stand in as empty tensors (erased as dead).
    unsigned next = 1;
    auto result = [&](bool computed, Value value) -> Value {
      auto type = llvm::cast<RankedTensorType>(value.getType());
      return computed ? results[next++]
                      : tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                                type.getElementType())
                            .getResult();
    };
    SmallVector<Value> replacements{mean};
    Value dx = result(inputGrad, op.getInputGrad());
    replacements.push_back(
        inputGrad ? reshape(rewriter, loc, dx, op.getInputGrad().getType())
                  : dx);
    replacements.push_back(result(weightGrad, op.getWeightGrad()));
    if (f.bias)
      replacements.push_back(result(biasGrad, op.getBiasGrad()));
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

} // namespace

void mlir::tg::populateTGFusedToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<LinearCrossEntropyLowering>(patterns.getContext());
}
