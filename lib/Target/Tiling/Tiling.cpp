//===- Tiling.cpp - tile sizes of the neutral ops from byte budgets -------===//

#include "tgc/Target/Tiling.h"

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

static int64_t bytesPerElement(Type type) {
  return std::max<int64_t>(
      1, getElementTypeOrSelf(type).getIntOrFloatBitWidth() / 8);
}

tgc::AttentionShape tgc::AttentionShape::of(Operation *op) {
  Value query, key;
  if (auto attention = llvm::dyn_cast<tg::AttentionOp>(op))
    query = attention.getQuery(), key = attention.getKey();
  else if (auto grad = llvm::dyn_cast<tg::AttentionGradOp>(op))
    query = grad.getQuery(), key = grad.getKey();
  assert(query && "not an attention op");
  auto q = llvm::cast<RankedTensorType>(query.getType());
  auto k = llvm::cast<RankedTensorType>(key.getType());
  int64_t heads = k.getDimSize(2);
  return {q.getDimSize(0), q.getDimSize(1),         k.getDimSize(1),
          heads,           q.getDimSize(2) / heads, bytesPerElement(q)};
}

bool tgc::isTiledAttention(Operation *op) {
  if (auto attention = llvm::dyn_cast<tg::AttentionOp>(op))
    return !attention.getPositions();
  return llvm::isa<tg::AttentionGradOp>(op);
}

Attribute tgc::attentionTiling(Operation *op, int64_t scoreTileBytes,
                               int64_t taskBytes) {
  if (!isTiledAttention(op) || (scoreTileBytes <= 0 && taskBytes <= 0))
    return {};
  AttentionShape shape = AttentionShape::of(op);
  int64_t tile =
      scoreTileBytes > 0 ? batchedTilePositions(shape, scoreTileBytes) : 0;
  int64_t taskTile = taskBytes > 0 ? taskTilePositions(shape, taskBytes) : 0;
  return tg::AttentionTilingAttr::get(op->getContext(), tile, taskTile,
                                      /*transposed_operands=*/true);
}

/// √(bytes / bytesPerSquare) positions, rounded down to a multiple of 16
/// above 16, within [16, the sequence].
static int64_t squareTile(const tgc::AttentionShape &shape, int64_t bytes,
                          int64_t bytesPerSquare) {
  auto t = static_cast<int64_t>(std::sqrt(static_cast<double>(bytes) /
                                          static_cast<double>(bytesPerSquare)));
  if (t > 16)
    t -= t % 16;
  return std::clamp<int64_t>(t, 16, shape.positions());
}

int64_t tgc::batchedTilePositions(const AttentionShape &shape,
                                  int64_t scoreBytes) {
  return squareTile(shape, scoreBytes,
                    shape.batch * shape.keyValueHeads * shape.groupSize *
                        shape.elementBytes);
}

int64_t tgc::taskTilePositions(const AttentionShape &shape, int64_t taskBytes) {
  return squareTile(shape, taskBytes, shape.groupSize * shape.elementBytes);
}

int64_t tgc::normRowsPerTask(Operation *norm, int64_t taskBytes) {
  auto type = llvm::cast<RankedTensorType>(norm->getOperand(0).getType());
  if (type.getRank() < 2 || type.getNumElements() == 0)
    return 0;
  int64_t rowBytes = type.getShape().back() * bytesPerElement(type);
  return std::max<int64_t>(taskBytes / std::max<int64_t>(rowBytes, 1), 1);
}

LogicalResult tgc::setExpertRowChunks(Operation *root, StringRef pass,
                                      int64_t chunkRows, int64_t tailRows) {
  if (chunkRows < 1 || tailRows < 1 || tailRows > chunkRows)
    return root->emitError() << pass
                             << ": expert chunks need 1 <= expert-tail-rows <= "
                                "expert-chunk-rows, got "
                             << tailRows << " and " << chunkRows;
  auto chunks = tg::RowChunksAttr::get(root->getContext(), chunkRows, tailRows);
  root->walk([&](Operation *op) {
    if (isa<tg::GroupedMatmulOp, tg::GroupedWeightGradOp>(op))
      op->setAttr(tg::TGDialect::kTilingAttrName, chunks);
  });
  return success();
}
