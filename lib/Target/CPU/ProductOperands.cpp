//===- ProductOperands.cpp - narrow operands of the CPU matmuls -----------===//
//
// Products of bf16/f16 operands: rounded values stored where only f32
// products read them, casts moved into the loops that write the inputs,
// and narrow operands widened once into f32 copies.
//
//===----------------------------------------------------------------------===//

#include "MatmulStages.h"
#include "tgc/Target/CPU/Passes.h"

#include "BF16Products.h"
#include "tgc/Target/CPU/TileModel.h"
#include "tgc/Target/ProductFusion.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <map>

using namespace mlir;
using namespace tgc::cpu;

namespace tgc::cpu::matmuls {

/// Whether `op` is a product on buffers with an f32 output (its narrow
/// inputs are widened by widenNarrowOperands).
bool isWidenedProduct(Operation *op) {
  auto product = llvm::dyn_cast<linalg::LinalgOp>(op);
  return llvm::isa_and_nonnull<linalg::MatmulOp, linalg::BatchMatmulOp>(op) &&
         product.hasPureBufferSemantics() &&
         getElementTypeOrSelf(product.getDpsInits()[0].getType()).isF32();
}

/// A narrow (bf16/f16) buffer that one elementwise loop writes whole by
/// rounding f32 values (its yield an `arith.truncf`), and that only
/// products read (directly or through reshapes), would be rounded, stored,
/// read back and widened to f32 for them. Instead the loop stores the
/// rounded values widened back (`extf(truncf(x))`, the same numbers the
/// products would see) into an f32 buffer that the products read: one pass
/// instead of two, and no narrow buffer. For targets that widen (no AMX,
/// no AVX512-BF16): the copies of the weights, of the gradients entering
/// the backward products and of the products' activations, where the
/// products follow the cast (see kMaxOpsToReaders).
void roundInsteadOfNarrowing(
    ModuleOp module, llvm::function_ref<bool(Operation *)> keepsNarrow) {
  SmallVector<memref::AllocOp> narrow;
  module.walk([&](memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    if (type.hasStaticShape() && type.getLayout().isIdentity() &&
        llvm::isa<BFloat16Type, Float16Type>(type.getElementType()))
      narrow.push_back(alloc);
  });
  IRRewriter rewriter(module.getContext());
  for (memref::AllocOp alloc : narrow) {
    Value buffer = alloc.getResult();
    linalg::GenericOp writer;
    SmallVector<Operation *> reshapes;
    bool onlyProducts = true;
    // A product reading `v` (not writing it).
    auto readsAsProduct = [&](Operation *user, Value v) {
      return isWidenedProduct(user) && !keepsNarrow(user) &&
             !llvm::is_contained(
                 llvm::cast<linalg::LinalgOp>(user).getDpsInits(), v);
    };
    auto readByProducts = [&](Value v) {
      return llvm::all_of(v.getUsers(), [&](Operation *user) {
        return readsAsProduct(user, v);
      });
    };
    for (Operation *user : buffer.getUsers()) {
      auto generic = llvm::dyn_cast<linalg::GenericOp>(user);
      if (generic && llvm::is_contained(generic.getDpsInits(), buffer) &&
          !llvm::is_contained(generic.getDpsInputs(), buffer) && !writer) {
        writer = generic;
        continue;
      }
      if (llvm::isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(user) &&
          readByProducts(user->getResult(0))) {
        reshapes.push_back(user);
        continue;
      }
      if (!readsAsProduct(user, buffer))
        onlyProducts = false;
    }
    if (!writer || !onlyProducts || writer.getNumLoops() == 0 ||
        writer.getNumReductionLoops() != 0)
      continue;
    // The writer covers the buffer (an identity map), does not read what
    // it writes, and rounds an f32 value into it.
    OpOperand *init = nullptr;
    for (OpOperand &operand : writer.getDpsInitsMutable())
      if (operand.get() == buffer)
        init = &operand;
    if (!writer.getMatchingIndexingMap(init).isIdentity() ||
        !writer.getMatchingBlockArgument(init).use_empty())
      continue;
    auto yield = llvm::cast<linalg::YieldOp>(writer.getBody()->getTerminator());
    unsigned result = init->getOperandNumber() - writer.getNumDpsInputs();
    auto round = yield.getOperand(result).getDefiningOp<arith::TruncFOp>();
    if (!round || !round.getIn().getType().isF32())
      continue;
    // Every reader comes soon after the writer, in its block: an f32
    // buffer kept longer (a bf16 copy the backward pass saves for a weight
    // gradient) would cost twice the memory of the narrow one for all that
    // time, where a widened copy lives only around its product.
    constexpr int kMaxOpsToReaders = 64;
    llvm::SmallPtrSet<Operation *, 8> readers;
    for (Operation *user : buffer.getUsers()) {
      if (user == writer)
        continue;
      if (llvm::is_contained(reshapes, user))
        readers.insert(user->getUsers().begin(), user->getUsers().end());
      readers.insert(user);
    }
    int seen = 0;
    for (Operation *op = writer->getNextNode();
         op && !readers.empty() && seen < kMaxOpsToReaders;
         op = op->getNextNode(), ++seen)
      readers.erase(op);
    if (!readers.empty())
      continue;
    Type f32 = rewriter.getF32Type();
    rewriter.setInsertionPoint(alloc);
    auto wide = memref::AllocOp::create(
        rewriter, alloc.getLoc(),
        MemRefType::get(alloc.getType().getShape(), f32));
    rewriter.setInsertionPoint(yield);
    Value widened =
        arith::ExtFOp::create(rewriter, round.getLoc(), f32, round.getResult());
    rewriter.modifyOpInPlace(writer, [&] {
      yield->setOperand(result, widened);
      writer.getMatchingBlockArgument(init).setType(f32);
      init->set(wide);
    });
    for (Operation *reshape : reshapes) {
      rewriter.setInsertionPoint(reshape);
      Value view;
      if (auto collapse = llvm::dyn_cast<memref::CollapseShapeOp>(reshape))
        view =
            memref::CollapseShapeOp::create(rewriter, collapse.getLoc(), wide,
                                            collapse.getReassociationIndices());
      else {
        auto expand = llvm::cast<memref::ExpandShapeOp>(reshape);
        view = memref::ExpandShapeOp::create(
            rewriter, expand.getLoc(), expand.getResultType().getShape(), wide,
            expand.getReassociationIndices());
      }
      rewriter.replaceOp(reshape, view);
    }
    rewriter.replaceAllUsesWith(alloc.getResult(), wide.getResult());
    rewriter.eraseOp(alloc);
  }
}

/// Whether `use` of a view only reads it: a linalg input, a load, a copy's
/// source.
bool onlyReads(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto linalgOp = llvm::dyn_cast<linalg::LinalgOp>(user))
    return linalgOp.isDpsInput(&use);
  if (auto copy = llvm::dyn_cast<memref::CopyOp>(user))
    return use.get() == copy.getSource();
  return llvm::isa<memref::LoadOp, vector::TransferReadOp, vector::LoadOp>(
      user);
}

/// Remakes the chain of views from `root` to `view` (reshapes and
/// subviews) on `newRoot`, whose element type may differ: each new view
/// right after its original, or all at the rewriter's insertion point with
/// `inPlace` false. Null when the chain holds anything else.
Value remakeViewChain(RewriterBase &rewriter, Value root, Value view,
                      Value newRoot, bool inPlace) {
  if (view == root)
    return newRoot;
  Operation *op = view.getDefiningOp();
  if (!llvm::isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp,
                             memref::SubViewOp>(op))
    return {};
  Value source =
      remakeViewChain(rewriter, root, op->getOperand(0), newRoot, inPlace);
  if (!source)
    return {};
  OpBuilder::InsertionGuard guard(rewriter);
  if (inPlace)
    rewriter.setInsertionPointAfter(op);
  Location loc = op->getLoc();
  Value remade;
  if (auto expand = llvm::dyn_cast<memref::ExpandShapeOp>(op)) {
    remade = memref::ExpandShapeOp::create(
        rewriter, loc, expand.getResultType().getShape(), source,
        expand.getReassociationIndices(), expand.getMixedOutputShape());
  } else if (auto collapse = llvm::dyn_cast<memref::CollapseShapeOp>(op)) {
    remade = memref::CollapseShapeOp::create(
        rewriter, loc, source, collapse.getReassociationIndices());
  } else {
    auto subview = llvm::cast<memref::SubViewOp>(op);
    auto type = memref::SubViewOp::inferRankReducedResultType(
        subview.getType().getShape(), llvm::cast<MemRefType>(source.getType()),
        subview.getMixedOffsets(), subview.getMixedSizes(),
        subview.getMixedStrides());
    remade = memref::SubViewOp::create(
        rewriter, loc, llvm::cast<MemRefType>(type), source,
        subview.getMixedOffsets(), subview.getMixedSizes(),
        subview.getMixedStrides());
  }
  if (!inPlace)
    rewriter.setInsertionPointAfter(remade.getDefiningOp());
  return remade;
}

/// Whether `view` is `root` reshaped (no subviews, no operands but the
/// source): such a chain can be remade anywhere after the root.
bool isReshapeOf(Value view, Value root) {
  while (view != root) {
    Operation *op = view.getDefiningOp();
    if (!llvm::isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(
            op) ||
        op->getNumOperands() != 1)
      return false;
    view = op->getOperand(0);
  }
  return true;
}

/// How a loop casts an f32 buffer X for products into a buffer Y of X's
/// shape: by rounding to bf16/f16 precision in f32 (`extf(truncf(x))`,
/// targets that widen: roundInsteadOfNarrowing makes them), or by narrowing
/// (`truncf(x)`, targets with bf16 products). Null if `op` is no such loop.
Type castForProducts(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return {};
  auto in = llvm::dyn_cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto out = llvm::dyn_cast<MemRefType>(op.getDpsInits()[0].getType());
  if (!in || !out || in.getShape() != out.getShape() ||
      !in.getElementType().isF32())
    return {};
  Block *body = op.getBody();
  auto yield = llvm::cast<linalg::YieldOp>(body->getTerminator());
  Value result = yield.getOperand(0);
  if (out.getElementType().isF32()) {
    auto widen = result.getDefiningOp<arith::ExtFOp>();
    if (!widen || body->getOperations().size() != 3)
      return {};
    result = widen.getIn();
  } else if (body->getOperations().size() != 2) {
    return {};
  }
  auto round = result.getDefiningOp<arith::TruncFOp>();
  if (!round || round.getIn() != body->getArgument(0) ||
      !llvm::isa<BFloat16Type, Float16Type>(round.getType()))
    return {};
  return round.getType();
}

/// A loop that casts an f32 buffer X for the products (castForProducts)
/// is one more pass over memory, and one more parallel region, than the
/// f32 step has: at two threads such passes cost the bf16 step much of
/// what its products save. Where one elementwise loop (or one copy, in
/// parallel tasks perhaps) writes X and the rest of the step only reads
/// it, that loop casts what it stores instead:
/// into a buffer of X's shape that the products read, replacing X where
/// the cast was X's only reader, beside it otherwise; a rounding cast into
/// X itself where nothing else reads X. The same numbers, without the pass
/// (and without X's f32 buffer where the products alone read it). A
/// writer that is a product's epilogue (`epilogues`) is replaced there.
void castInProducers(ModuleOp module,
                     MutableArrayRef<linalg::GenericOp> epilogues) {
  SmallVector<linalg::GenericOp> casts;
  module.walk([&](linalg::GenericOp op) {
    if (castForProducts(op))
      casts.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::GenericOp cast : casts) {
    Type narrowType = castForProducts(cast);
    Value input = cast.getDpsInputs()[0];
    auto output = cast.getDpsInits()[0].getDefiningOp<memref::AllocOp>();
    Value root = tgc::rootBuffer(input);
    auto source = root.getDefiningOp<memref::AllocOp>();
    if (!output || !source)
      continue;
    // Every access to X, through its views: one writer, the cast and
    // perhaps other readers. The writer may be a copy (attention's tasks
    // copy each head's dV into its columns of X): it becomes the loop it
    // stands for, which then casts as it copies.
    linalg::GenericOp writer;
    linalg::CopyOp copyWriter;
    OpOperand *written = nullptr;
    bool otherReaders = false, otherAccess = false;
    SmallVector<Value> views{root};
    while (!views.empty() && !otherAccess) {
      Value view = views.pop_back_val();
      for (OpOperand &use : view.getUses()) {
        Operation *user = use.getOwner();
        if (user == cast || llvm::isa<memref::DeallocOp>(user))
          continue;
        if (llvm::isa<memref::ExpandShapeOp, memref::CollapseShapeOp,
                      memref::SubViewOp>(user)) {
          views.push_back(user->getResult(0));
          continue;
        }
        if (onlyReads(use)) {
          otherReaders = true;
          continue;
        }
        auto copy = llvm::dyn_cast<linalg::CopyOp>(user);
        if (copy && !writer && !copyWriter && copy.isDpsInit(&use) &&
            copy.hasPureBufferSemantics() &&
            getElementTypeOrSelf(copy.getInputs()[0].getType()).isF32()) {
          copyWriter = copy;
          continue;
        }
        auto generic = llvm::dyn_cast<linalg::GenericOp>(user);
        if (!generic || writer || copyWriter || !generic.isDpsInit(&use) ||
            !generic.getMatchingBlockArgument(&use).use_empty()) {
          otherAccess = true;
          break;
        }
        writer = generic;
        written = &use;
      }
    }
    if (otherAccess || (!writer && !copyWriter))
      continue;
    // The writer runs first.
    Operation *writerAt = cast->getBlock()->findAncestorOpInBlock(
        writer ? *writer.getOperation() : *copyWriter.getOperation());
    if (!writerAt || !writerAt->isBeforeInBlock(cast))
      continue;
    if (copyWriter) {
      rewriter.setInsertionPoint(copyWriter);
      FailureOr<linalg::GenericOp> loop =
          linalg::generalizeNamedOp(rewriter, copyWriter);
      if (failed(loop))
        continue;
      writer = *loop;
      written = writer.getDpsInitOperand(0);
    }
    auto yield = llvm::cast<linalg::YieldOp>(writer.getBody()->getTerminator());
    unsigned result = written->getOperandNumber() - writer.getNumDpsInputs();
    Value value = yield.getOperand(result);
    if (!value.getType().isF32())
      continue;
    Type castType = getElementTypeOrSelf(output.getType());
    auto castValue = [&](OpBuilder &b, Location loc, Value v) -> Value {
      Value narrow = arith::TruncFOp::create(b, loc, narrowType, v);
      if (castType == narrow.getType())
        return narrow;
      return arith::ExtFOp::create(b, loc, castType, narrow);
    };
    auto eraseCast = [&](Value replacement) {
      rewriter.eraseOp(cast);
      for (Operation *user : llvm::make_early_inc_range(output->getUsers()))
        if (llvm::isa<memref::DeallocOp>(user))
          rewriter.eraseOp(user);
      rewriter.replaceAllUsesWith(output.getResult(), replacement);
      rewriter.eraseOp(output);
    };

    if (!otherReaders && castType.isF32()) {
      // Y's readers read X in its place, so X must be there before them.
      DominanceInfo dominance(cast->getParentOp());
      if (llvm::any_of(output->getUses(), [&](OpOperand &use) {
            return use.getOwner() != cast &&
                   !llvm::isa<memref::DeallocOp>(use.getOwner()) &&
                   !dominance.properlyDominates(input, use.getOwner());
          }))
        continue;
      rewriter.setInsertionPoint(yield);
      Value rounded = castValue(rewriter, yield.getLoc(), value);
      rewriter.modifyOpInPlace(yield,
                               [&] { yield->setOperand(result, rounded); });
      eraseCast(input);
      continue;
    }

    // The writer stores the cast values into a buffer of X's shape, next
    // to X; the cast's view of X and the writer's are remade on it.
    // Y's readers then read a reshape of that buffer: of Y's type when X
    // and Y are plain buffers.
    auto plain = [](MemRefType type) {
      return type.getLayout().isIdentity() && !type.getMemorySpace();
    };
    if (!isReshapeOf(input, root) || !plain(source.getType()) ||
        output.getType() !=
            MemRefType::get(llvm::cast<MemRefType>(input.getType()).getShape(),
                            castType))
      continue;
    MemRefType castBufferType =
        MemRefType::get(source.getType().getShape(), castType);
    rewriter.setInsertionPointAfter(source);
    auto castBuffer = memref::AllocOp::create(
        rewriter, output.getLoc(), castBufferType, output.getAlignmentAttr());
    rewriter.setInsertionPointAfter(castBuffer);
    Value readView =
        remakeViewChain(rewriter, root, input, castBuffer, /*inPlace=*/false);
    Value writeView = remakeViewChain(rewriter, root, written->get(),
                                      castBuffer, /*inPlace=*/true);
    assert(readView && writeView && "the walk above followed only views");
    rewriter.setInsertionPoint(yield);
    Value castResult = castValue(rewriter, yield.getLoc(), value);
    if (!otherReaders) {
      // Only the cast read X: the writer stores into the new buffer alone.
      rewriter.modifyOpInPlace(writer, [&] {
        yield->setOperand(result, castResult);
        writer.getMatchingBlockArgument(written).setType(castType);
        written->set(writeView);
      });
      eraseCast(readView);
      continue;
    }
    SmallVector<Value> outputs = writer.getDpsInits();
    outputs.push_back(writeView);
    SmallVector<AffineMap> maps = writer.getIndexingMapsArray();
    maps.push_back(writer.getMatchingIndexingMap(written));
    rewriter.setInsertionPoint(writer);
    auto fused = linalg::GenericOp::create(
        rewriter, writer.getLoc(), TypeRange{}, writer.getDpsInputs(), outputs,
        maps, writer.getIteratorTypesArray());
    fused->setDiscardableAttrs(writer->getDiscardableAttrDictionary());
    rewriter.inlineRegionBefore(writer.getRegion(), fused.getRegion(),
                                fused.getRegion().end());
    fused.getBody()->addArgument(castType, writer.getLoc());
    rewriter.modifyOpInPlace(yield, [&] {
      yield->insertOperands(yield->getNumOperands(), castResult);
    });
    // A writer that is a product's epilogue stays one, with its new output.
    for (linalg::GenericOp &epilogue : epilogues)
      if (epilogue == writer)
        epilogue = fused;
    rewriter.eraseOp(writer);
    eraseCast(readView);
  }
}

/// The transpose that writes `narrow`, a buffer of its own that only
/// `readers` read besides: a static narrow matrix transposed for them.
static linalg::TransposeOp
transposeForReaders(Value narrow, const llvm::DenseSet<Operation *> &readers) {
  auto alloc = narrow.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return {};
  linalg::TransposeOp writer;
  for (Operation *user : narrow.getUsers()) {
    auto transpose = llvm::dyn_cast<linalg::TransposeOp>(user);
    if (transpose && transpose.getInit() == narrow && !writer) {
      writer = transpose;
      continue;
    }
    if (!readers.contains(user))
      return {};
  }
  if (!writer || !writer.hasPureBufferSemantics() ||
      writer.getPermutation() != ArrayRef<int64_t>{1, 0} ||
      writer->getBlock() != alloc->getBlock())
    return {};
  auto source = llvm::dyn_cast<MemRefType>(writer.getInput().getType());
  if (!source || !source.hasStaticShape())
    return {};
  return writer;
}

/// `wide[i] = extf(narrow[source(i)])` over `wide`'s (f32) indices: a
/// widening copy, or with a permuted `source` map a widening transpose.
static linalg::GenericOp widen(OpBuilder &b, Location loc, Value narrow,
                               Value wide, AffineMap source) {
  int64_t rank = llvm::cast<MemRefType>(wide.getType()).getRank();
  return linalg::GenericOp::create(
      b, loc, ValueRange{narrow}, ValueRange{wide},
      ArrayRef<AffineMap>{source, b.getMultiDimIdentityMap(rank)},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value x = arith::ExtFOp::create(nb, l, nb.getF32Type(), args[0]);
        linalg::YieldOp::create(nb, l, x);
      });
}

/// Replaces `transpose` (narrow, into `narrow`) by a transposing widening
/// into a new f32 buffer, which replaces `narrow` everywhere: one pass over
/// the matrix instead of a scalar narrow transpose and a widening copy, in
/// the form tgc-vectorize-transposes reads in register blocks.
static void widenWhileTransposing(IRRewriter &rewriter,
                                  linalg::TransposeOp transpose, Value narrow) {
  auto type = llvm::cast<MemRefType>(narrow.getType());
  Operation *alloc = narrow.getDefiningOp();
  Location loc = transpose.getLoc();
  rewriter.setInsertionPoint(alloc);
  Value wide = memref::AllocOp::create(
      rewriter, loc, MemRefType::get(type.getShape(), rewriter.getF32Type()));
  rewriter.setInsertionPoint(transpose);
  widen(rewriter, loc, transpose.getInput(), wide,
        AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0},
                                     rewriter.getContext()));
  rewriter.eraseOp(transpose);
  rewriter.replaceAllUsesWith(narrow, wide);
  rewriter.eraseOp(alloc);
}

/// The block argument of a product's widened operand is f32 too, and the
/// casts of it in the body go: the product is an f32 one.
static void widenBodyArgument(linalg::LinalgOp op, OpOperand *operand) {
  BlockArgument arg = op.getMatchingBlockArgument(operand);
  auto f32 = Float32Type::get(op->getContext());
  if (arg.getType() == f32 || !llvm::all_of(arg.getUsers(), [&](Operation *u) {
        auto ext = llvm::dyn_cast<arith::ExtFOp>(u);
        return ext && ext.getType() == f32;
      }))
    return;
  arg.setType(f32);
  for (Operation *user : llvm::make_early_inc_range(arg.getUsers()))
    if (auto ext = llvm::dyn_cast<arith::ExtFOp>(user);
        ext && ext.getType() == f32) {
      ext.getResult().replaceAllUsesWith(arg);
      ext.erase();
    }
}

void widenNarrowOperands(ModuleOp module,
                         llvm::function_ref<bool(Operation *)> keepsNarrow) {
  SmallVector<linalg::LinalgOp> products;
  module.walk([&](linalg::LinalgOp op) {
    if (!isWidenedProduct(op) || keepsNarrow(op))
      return;
    // The arena planner places the widened buffers of a function body and
    // of its top-level loops; the deallocation pipeline frees the others.
    if (llvm::any_of(op.getDpsInputs(), [](Value in) {
          auto type = llvm::dyn_cast<MemRefType>(in.getType());
          return type && type.hasStaticShape() &&
                 llvm::isa<BFloat16Type, Float16Type>(type.getElementType());
        }))
      products.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  struct Widened {
    Value wide;
    Operation *widening; // the copy; its buffer is valid from here on
  };
  DenseMap<Value, Widened> widened;
  auto reusable = [&](Value narrow, Operation *product) -> Value {
    auto it = widened.find(narrow);
    if (it == widened.end() ||
        it->second.widening->getBlock() != product->getBlock() ||
        !it->second.widening->isBeforeInBlock(product))
      return {};
    Value root = tgc::rootBuffer(narrow);
    for (Operation *op = it->second.widening->getNextNode(); op != product;
         op = op->getNextNode())
      if (tgc::mayWriteBuffer(op, root))
        return {};
    return it->second.wide;
  };
  llvm::DenseSet<Operation *> readers;
  for (linalg::LinalgOp op : products)
    readers.insert(op);
  for (linalg::LinalgOp op : products) {
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    for (OpOperand *operand : op.getDpsInputOperands()) {
      auto type = llvm::cast<MemRefType>(operand->get().getType());
      if (type.getElementType() == f32)
        continue;
      if (Value wide = reusable(operand->get(), op)) {
        operand->set(wide);
      } else if (linalg::TransposeOp transpose =
                     transposeForReaders(operand->get(), readers)) {
        widenWhileTransposing(rewriter, transpose, operand->get());
      } else {
        rewriter.setInsertionPoint(op);
        auto wide = memref::AllocOp::create(
            rewriter, loc, MemRefType::get(type.getShape(), f32));
        auto copy = widen(rewriter, loc, operand->get(), wide,
                          rewriter.getMultiDimIdentityMap(type.getRank()));
        widened[operand->get()] = {wide, copy};
        operand->set(wide);
      }
    }
  }
}

void prepareProductOperands(ModuleOp module,
                            MutableArrayRef<linalg::GenericOp> epilogues,
                            llvm::function_ref<bool(Operation *)> keepsNarrow) {
  roundInsteadOfNarrowing(module, keepsNarrow);
  castInProducers(module, epilogues);
  widenNarrowOperands(module, keepsNarrow);
  // Products whose narrow operands became f32 buffers (rounded values
  // stored as f32, or widened copies) compute in f32.
  module.walk([](linalg::LinalgOp op) {
    if (!llvm::isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
      return;
    for (OpOperand *operand : op.getDpsInputOperands()) {
      auto type = llvm::dyn_cast<MemRefType>(operand->get().getType());
      if (type && type.getElementType().isF32())
        widenBodyArgument(op, operand);
    }
  });
}

void padRhsRowStrides(ModuleOp module) {
  SmallVector<linalg::MatmulOp> products;
  module.walk([&](linalg::MatmulOp op) {
    if (isScheduledProduct(op) && isF32Product(op) &&
        op.getIndexingMapsArray() ==
            linalg::MatmulOp::getDefaultIndexingMaps(op.getContext()))
      products.push_back(op);
  });
  for (linalg::MatmulOp op : products) {
    OpOperand &rhs = op->getOpOperand(1);
    auto type = llvm::cast<MemRefType>(rhs.get().getType());
    int64_t k = type.getDimSize(0), n = type.getDimSize(1);
    if (!type.getLayout().isIdentity() || (n * 4) % 2048 != 0)
      continue;
    // One 64-byte line more per row: row r starts r lines further on.
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto padded = MemRefType::get({k, n + 64 / 4}, type.getElementType());
    Value buffer = memref::AllocOp::create(b, loc, padded);
    Value view = memref::SubViewOp::create(
        b, loc, buffer,
        ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(k), b.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    linalg::CopyOp::create(b, loc, rhs.get(), view);
    rhs.set(view);
  }
}

} // namespace tgc::cpu::matmuls
