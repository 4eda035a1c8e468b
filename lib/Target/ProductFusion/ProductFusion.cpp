//===- ProductFusion.cpp - loops a target fuses into a product ------------===//
//
// Matchers over linalg on buffers; see tgc/Target/ProductFusion.h.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/ProductFusion.h"

#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace tgc;

mlir::Value tgc::rootBuffer(mlir::Value v) {
  auto memref = llvm::dyn_cast<mlir::MemrefValue>(v);
  return memref ? mlir::memref::skipViewLikeOps(memref) : v;
}

/// Whether `op` (or an op nested in it) uses the buffer `root` or a view
/// of it.
static bool touchesBuffer(mlir::Operation *op, mlir::Value root) {
  bool touches = false;
  op->walk([&](mlir::Operation *inner) {
    for (mlir::Value operand : inner->getOperands())
      if (rootBuffer(operand) == root)
        touches = true;
  });
  return touches;
}

bool tgc::mayWriteBuffer(mlir::Operation *op, mlir::Value root) {
  std::optional<llvm::SmallVector<mlir::MemoryEffects::EffectInstance>>
      effects = mlir::getEffectsRecursively(op);
  return !effects ||
         llvm::any_of(
             *effects, [&](const mlir::MemoryEffects::EffectInstance &e) {
               return llvm::isa<mlir::MemoryEffects::Write>(e.getEffect()) &&
                      (!e.getValue() || rootBuffer(e.getValue()) == root);
             });
}

/// Views and allocations touch no memory.
static bool movesNoData(mlir::Operation *op) {
  return llvm::isa<mlir::ViewLikeOpInterface, mlir::memref::AllocOp>(op);
}

/// The first op after `op` (at most a few, same block) that touches the
/// buffer `root` and moves data; null if none within the limit.
static mlir::Operation *nextToucher(mlir::Operation *op, mlir::Value root) {
  constexpr int kMaxOpsBetween = 16;
  int seen = 0;
  for (mlir::Operation *next = op->getNextNode(); next && seen < kMaxOpsBetween;
       next = next->getNextNode(), ++seen)
    if (!movesNoData(next) && touchesBuffer(next, root))
      return next;
  return nullptr;
}

/// Whether an op after `op` (same block) touches the buffer `root` other
/// than to view or free it.
static bool touchedAfter(mlir::Operation *op, mlir::Value root) {
  for (mlir::Operation *next = op->getNextNode(); next;
       next = next->getNextNode())
    if (!movesNoData(next) && touchesBuffer(next, root) &&
        !llvm::isa<mlir::memref::DeallocOp>(next))
      return true;
  return false;
}

mlir::linalg::FillOp tgc::findAccumulatorInit(mlir::linalg::LinalgOp product) {
  constexpr int kMaxOpsBetween = 64;
  if (!product.hasPureBufferSemantics() || product.getNumDpsInits() != 1)
    return {};
  mlir::Value acc = product.getDpsInits()[0];
  mlir::Value root = rootBuffer(acc);
  int seen = 0;
  for (mlir::Operation *op = product->getPrevNode();
       op && seen < kMaxOpsBetween; op = op->getPrevNode(), ++seen) {
    auto fill = llvm::dyn_cast<mlir::linalg::FillOp>(op);
    if (fill && fill.hasPureBufferSemantics() && fill.getOutputs()[0] == acc &&
        mlir::matchPattern(fill.getInputs()[0], mlir::m_Constant()))
      return fill;
    if (touchesBuffer(op, root))
      return {};
  }
  return {};
}

int64_t tgc::columnDims(mlir::MemRefType type, int64_t n) {
  int64_t product = 1;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    product *= type.getDimSize(d);
    if (product == n)
      return d;
    if (product > n)
      return -1;
  }
  return -1;
}

bool tgc::isRowMajorLike(mlir::Value v, int64_t m, int64_t n) {
  auto type = llvm::dyn_cast<mlir::MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getRank() >= 1 &&
         type.getNumElements() == m * n && columnDims(type, n) >= 1 &&
         type.getLayout().isIdentity();
}

/// Whether `v` exists before `op` (same block), or is a fresh buffer or a
/// reshape of one made between `op` and its reader, which can move before
/// `op`.
static bool availableBefore(mlir::Value v, mlir::Operation *op) {
  mlir::Operation *def = v.getDefiningOp();
  if (!def)
    return true; // an argument of `op`'s block or of one around it
  if (def->getBlock() != op->getBlock()) {
    mlir::Operation *around = def->getBlock()->findAncestorOpInBlock(*op);
    return around && def->isBeforeInBlock(around);
  }
  if (def->isBeforeInBlock(op))
    return true;
  if (llvm::isa<mlir::memref::AllocOp>(def))
    return def->getNumOperands() == 0;
  if (llvm::isa<mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp>(
          def))
    return availableBefore(def->getOperand(0), op);
  return false;
}

bool tgc::isDirectEpilogue(mlir::linalg::GenericOp epilogue, mlir::Value acc) {
  auto accType = llvm::cast<mlir::MemRefType>(acc.getType());
  if (epilogue.getStaticLoopRanges() !=
      llvm::SmallVector<int64_t>(accType.getShape()))
    return false;
  for (mlir::OpOperand &operand : epilogue->getOpOperands()) {
    mlir::AffineMap map = epilogue.getMatchingIndexingMap(&operand);
    bool fits = rootBuffer(operand.get()) == acc
                    ? operand.get() == acc && map.isIdentity()
                : epilogue.isDpsInit(&operand) ? map.isPermutation()
                                               : map.isProjectedPermutation();
    if (!fits)
      return false;
  }
  return true;
}

mlir::linalg::GenericOp tgc::findEpilogue(mlir::linalg::LinalgOp product) {
  bool batched = llvm::isa<mlir::linalg::BatchMatmulOp>(product);
  if (!product.hasPureBufferSemantics() || product.getNumDpsInits() != 1 ||
      !(batched || llvm::isa<mlir::linalg::MatmulOp>(product)))
    return {};
  mlir::Value acc = product.getDpsInits()[0];
  auto accType = llvm::dyn_cast<mlir::MemRefType>(acc.getType());
  if (!accType || !accType.hasStaticShape() ||
      accType.getRank() != (batched ? 3 : 2) ||
      !accType.getLayout().isIdentity() ||
      !acc.getDefiningOp<mlir::memref::AllocOp>())
    return {};
  int64_t m = accType.getDimSize(accType.getRank() - 2),
          n = accType.getDimSize(accType.getRank() - 1);
  auto epilogue = llvm::dyn_cast_or_null<mlir::linalg::GenericOp>(
      nextToucher(product, acc));
  if (!epilogue || !epilogue.hasPureBufferSemantics() ||
      epilogue.getNumDpsInits() == 0 || epilogue.getNumReductionLoops() != 0)
    return {};
  bool direct = isDirectEpilogue(epilogue, acc);
  if (!direct &&
      (batched ||
       !llvm::all_of(epilogue.getIndexingMapsArray(),
                     [](mlir::AffineMap map) { return map.isIdentity(); }) ||
       !epilogue.getBody()->getOps<mlir::linalg::IndexOp>().empty()))
    return {};
  llvm::SmallVector<mlir::Value> outs;
  for (mlir::Value init : epilogue.getDpsInits())
    outs.push_back(rootBuffer(init));
  bool inPlace = llvm::is_contained(outs, acc);
  if (inPlace && outs.size() != 1)
    return {};
  bool readsAcc = false;
  for (mlir::OpOperand &operand : epilogue->getOpOperands()) {
    mlir::Value v = operand.get();
    if (!direct && !isRowMajorLike(v, m, n))
      return {};
    if (rootBuffer(v) != acc)
      continue;
    if (epilogue.isDpsInit(&operand)) {
      // Updated in place: read through the loop's output argument.
      if (!direct || !epilogue.payloadUsesValueFromOperand(&operand))
        return {};
      readsAcc = true;
      continue;
    }
    // Read as an input, directly or through one expand_shape (another view
    // of the output, e.g. a collapse of a one-row product, is not fused).
    auto expand = v.getDefiningOp<mlir::memref::ExpandShapeOp>();
    if (inPlace || (v != acc && (!expand || expand.getSrc() != acc)))
      return {};
    readsAcc = true;
  }
  if (!readsAcc ||
      !llvm::all_of(epilogue->getOperands(),
                    [&](mlir::Value v) {
                      return rootBuffer(v) == acc ||
                             availableBefore(v, product);
                    }) ||
      (!inPlace && llvm::any_of(product.getDpsInputs(), [&](mlir::Value in) {
        return llvm::is_contained(outs, rootBuffer(in));
      })))
    return {};
  // Nothing between touches the loop's buffers.
  for (mlir::Operation *op = product->getNextNode(); op != epilogue;
       op = op->getNextNode())
    for (mlir::Value v : epilogue->getOperands())
      if (!movesNoData(op) && touchesBuffer(op, rootBuffer(v)))
        return {};
  return epilogue;
}

mlir::linalg::TransposeOp
tgc::findOutputTranspose(mlir::linalg::LinalgOp product) {
  if (!llvm::isa<mlir::linalg::BatchMatmulOp>(product) ||
      !product.hasPureBufferSemantics() || product.getNumDpsInits() != 1)
    return {};
  mlir::Value acc = product.getDpsInits()[0];
  auto accType = llvm::dyn_cast<mlir::MemRefType>(acc.getType());
  if (!accType || !accType.hasStaticShape() || accType.getRank() != 3 ||
      !accType.getLayout().isIdentity() ||
      !acc.getDefiningOp<mlir::memref::AllocOp>() ||
      !findAccumulatorInit(product) || findEpilogue(product))
    return {};
  auto transpose = llvm::dyn_cast_or_null<mlir::linalg::TransposeOp>(
      nextToucher(product, acc));
  if (!transpose || !transpose.hasPureBufferSemantics())
    return {};
  auto expand =
      transpose.getInput().getDefiningOp<mlir::memref::ExpandShapeOp>();
  if (!expand || expand.getSrc() != acc)
    return {};
  llvm::SmallVector<mlir::ReassociationIndices> groups =
      expand.getReassociationIndices();
  llvm::ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = expand.getResultType().getRank();
  if (groups.size() != 3 || groups[0] != mlir::ReassociationIndices{0, 1} ||
      groups[1] != mlir::ReassociationIndices{2} || rank < 4 || perm[0] != 0 ||
      perm[1] != 2 || perm[2] != 1)
    return {};
  for (int64_t d = 3; d < rank; ++d)
    if (perm[d] != d)
      return {};
  mlir::Value out = transpose.getInit();
  auto outType = llvm::dyn_cast<mlir::MemRefType>(out.getType());
  if (!outType || !outType.hasStaticShape() ||
      !outType.getLayout().isIdentity() || rootBuffer(out) == acc ||
      !availableBefore(out, product))
    return {};
  // Nothing between touches the new layout's buffer, nothing after reads
  // the product's output.
  for (mlir::Operation *op = product->getNextNode(); op != transpose;
       op = op->getNextNode())
    if (!movesNoData(op) && touchesBuffer(op, rootBuffer(out)))
      return {};
  if (touchedAfter(transpose, acc))
    return {};
  return transpose;
}

mlir::memref::CollapseShapeOp
tgc::findHeadsOperand(mlir::linalg::TransposeOp transpose,
                      llvm::function_ref<bool(mlir::Operation *)> fuses) {
  if (!transpose.hasPureBufferSemantics())
    return {};
  llvm::ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = perm.size();
  if (rank < 4 || perm[0] != 0 || perm[1] != 2 || perm[2] != 1)
    return {};
  for (int64_t d = 3; d < rank; ++d)
    if (perm[d] != d)
      return {};
  auto inType =
      llvm::dyn_cast<mlir::MemRefType>(transpose.getInput().getType());
  mlir::Value heads = transpose.getInit();
  if (!inType || !inType.hasStaticShape() || !inType.getLayout().isIdentity() ||
      !heads.getDefiningOp<mlir::memref::AllocOp>())
    return {};
  mlir::memref::CollapseShapeOp collapse;
  for (mlir::Operation *user : heads.getUsers()) {
    if (user == transpose || llvm::isa<mlir::memref::DeallocOp>(user))
      continue;
    auto c = llvm::dyn_cast<mlir::memref::CollapseShapeOp>(user);
    if (!c || collapse)
      return {};
    collapse = c;
  }
  if (!collapse)
    return {};
  llvm::SmallVector<mlir::ReassociationIndices> groups =
      collapse.getReassociationIndices();
  if (groups.size() != 3 || groups[0] != mlir::ReassociationIndices{0, 1} ||
      groups[1] != mlir::ReassociationIndices{2})
    return {};
  mlir::Operation *last = transpose;
  for (mlir::OpOperand &use : collapse->getUses()) {
    auto product = llvm::dyn_cast<mlir::linalg::BatchMatmulOp>(use.getOwner());
    if (!product || !fuses(product) || product.isDpsInit(&use) ||
        product->getBlock() != transpose->getBlock() ||
        product->isBeforeInBlock(transpose))
      return {};
    if (last->isBeforeInBlock(product))
      last = product;
  }
  // The products read the source later than the transpose did: nothing
  // between may write it.
  mlir::Value source = rootBuffer(transpose.getInput());
  for (mlir::Operation *op = transpose->getNextNode(); op != last;
       op = op->getNextNode()) {
    if (!touchesBuffer(op, source) ||
        llvm::isa<mlir::ViewLikeOpInterface, mlir::memref::DeallocOp>(op))
      continue;
    auto linalgOp = llvm::dyn_cast<mlir::linalg::LinalgOp>(op);
    if (!linalgOp || !linalgOp.hasPureBufferSemantics() ||
        llvm::any_of(linalgOp.getDpsInits(), [&](mlir::Value init) {
          return rootBuffer(init) == source;
        }))
      return {};
  }
  return collapse;
}
