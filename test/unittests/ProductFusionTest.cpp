//===- ProductFusionTest.cpp - the loops a target fuses into a product ----===//

#include "tgc/Target/ProductFusion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace tgc;

namespace {

class ProductFusion : public ::testing::Test {
protected:
  ProductFusion() {
    context.loadDialect<arith::ArithDialect, func::FuncDialect,
                        linalg::LinalgDialect, memref::MemRefDialect>();
  }

  /// Parses `body` as the body of @f(ARGS) and returns the module.
  OwningOpRef<ModuleOp> parse(const std::string &args,
                              const std::string &body) {
    std::string text = "#id = affine_map<(i, j) -> (i, j)>\n"
                       "#row = affine_map<(i, j) -> (i)>\n"
                       "func.func @f(" +
                       args + ") {\n  %zero = arith.constant 0.0 : f32\n" +
                       body + "\n  return\n}\n";
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text;
    return module;
  }

  template <typename OpTy> OpTy first(ModuleOp module) {
    OpTy found;
    module.walk([&](OpTy op) {
      if (!found)
        found = op;
    });
    return found;
  }

  MLIRContext context;
};

const char *kMatmulArgs = "%a: memref<4x8xf32>, %b: memref<8x16xf32>, "
                          "%r: memref<4x16xf32>, %out: memref<4x16xf32>";
const char *kMatmul =
    "  %acc = memref.alloc() : memref<4x16xf32>\n"
    "  linalg.fill ins(%zero : f32) outs(%acc : memref<4x16xf32>)\n"
    "  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>)\n"
    "                outs(%acc : memref<4x16xf32>)\n";
const char *kResidualAdd =
    "  linalg.generic {indexing_maps = [#id, #id, #id],\n"
    "                  iterator_types = [\"parallel\", \"parallel\"]}\n"
    "      ins(%acc, %r : memref<4x16xf32>, memref<4x16xf32>)\n"
    "      outs(%out : memref<4x16xf32>) {\n"
    "  ^bb0(%x: f32, %y: f32, %o: f32):\n"
    "    %s = arith.addf %x, %y : f32\n"
    "    linalg.yield %s : f32\n"
    "  }\n";

TEST_F(ProductFusion, FillAndResidualAdd) {
  auto module = parse(kMatmulArgs, std::string(kMatmul) + kResidualAdd);
  auto product = first<linalg::MatmulOp>(*module);
  EXPECT_EQ(findAccumulatorInit(product), first<linalg::FillOp>(*module));
  EXPECT_EQ(findEpilogue(product), first<linalg::GenericOp>(*module));
}

TEST_F(ProductFusion, NoFillPastAReader) {
  // A copy between the fill and the product reads the zeroed output.
  auto module =
      parse(kMatmulArgs,
            "  %acc = memref.alloc() : memref<4x16xf32>\n"
            "  linalg.fill ins(%zero : f32) outs(%acc : memref<4x16xf32>)\n"
            "  memref.copy %acc, %out : memref<4x16xf32> to memref<4x16xf32>\n"
            "  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>)\n"
            "                outs(%acc : memref<4x16xf32>)\n");
  EXPECT_FALSE(findAccumulatorInit(first<linalg::MatmulOp>(*module)));
}

TEST_F(ProductFusion, NoEpilogueAfterAnotherToucher) {
  // The copy of the product comes first: the add is not its epilogue.
  auto module =
      parse(kMatmulArgs, std::string(kMatmul) +
                             "  memref.copy %acc, %r : memref<4x16xf32> to "
                             "memref<4x16xf32>\n" +
                             kResidualAdd);
  EXPECT_FALSE(findEpilogue(first<linalg::MatmulOp>(*module)));
}

TEST_F(ProductFusion, NoEpilogueWithAReduction) {
  auto module = parse(
      "%a: memref<4x8xf32>, %b: memref<8x16xf32>, %sum: memref<4xf32>",
      std::string(kMatmul) +
          "  linalg.generic {indexing_maps = [#id, #row],\n"
          "                  iterator_types = [\"parallel\", \"reduction\"]}\n"
          "      ins(%acc : memref<4x16xf32>) outs(%sum : memref<4xf32>) {\n"
          "  ^bb0(%x: f32, %o: f32):\n"
          "    %s = arith.addf %x, %o : f32\n"
          "    linalg.yield %s : f32\n"
          "  }\n");
  EXPECT_FALSE(findEpilogue(first<linalg::MatmulOp>(*module)));
}

TEST_F(ProductFusion, NoEpilogueIntoTheProductsInput) {
  // The loop would overwrite %a while tiles of the product still read it.
  auto module = parse(
      "%a: memref<4x16xf32>, %b: memref<16x16xf32>, %r: memref<4x16xf32>",
      "  %acc = memref.alloc() : memref<4x16xf32>\n"
      "  linalg.fill ins(%zero : f32) outs(%acc : memref<4x16xf32>)\n"
      "  linalg.matmul ins(%a, %b : memref<4x16xf32>, memref<16x16xf32>)\n"
      "                outs(%acc : memref<4x16xf32>)\n"
      "  linalg.generic {indexing_maps = [#id, #id, #id],\n"
      "                  iterator_types = [\"parallel\", \"parallel\"]}\n"
      "      ins(%acc, %r : memref<4x16xf32>, memref<4x16xf32>)\n"
      "      outs(%a : memref<4x16xf32>) {\n"
      "  ^bb0(%x: f32, %y: f32, %o: f32):\n"
      "    %s = arith.addf %x, %y : f32\n"
      "    linalg.yield %s : f32\n"
      "  }\n");
  EXPECT_FALSE(findEpilogue(first<linalg::MatmulOp>(*module)));
}

TEST_F(ProductFusion, ColumnsAndRowMajor) {
  auto type = MemRefType::get({2, 3, 4}, Float32Type::get(&context));
  EXPECT_EQ(columnDims(type, 4), 2);
  EXPECT_EQ(columnDims(type, 12), 1);
  EXPECT_EQ(columnDims(type, 24), 0);
  EXPECT_EQ(columnDims(type, 5), -1);
  EXPECT_EQ(columnDims(type, 8), -1);

  auto module = parse("%bsd: memref<2x3x16xf32>, %t: memref<16x6xf32>, "
                      "%s: memref<6x16xf32, strided<[32, 1]>>",
                      "");
  auto f = first<func::FuncOp>(*module);
  EXPECT_TRUE(isRowMajorLike(f.getArgument(0), 6, 16));  // [B, S, D] as [M, N]
  EXPECT_FALSE(isRowMajorLike(f.getArgument(1), 6, 16)); // transposed
  EXPECT_FALSE(isRowMajorLike(f.getArgument(2), 6, 16)); // a strided view
  EXPECT_FALSE(isRowMajorLike(f.getArgument(0), 3, 32)); // N spans dims
}

const char *kHeadsArgs = "%q: memref<4x3x5xf32>, %k: memref<4x5x3xf32>, "
                         "%out: memref<2x3x2x3xf32>";
std::string scoresIntoSequence(const char *permutation,
                               const char *outType = "2x3x2x3") {
  return std::string(
             "  %acc = memref.alloc() : memref<4x3x3xf32>\n"
             "  linalg.fill ins(%zero : f32) outs(%acc : memref<4x3x3xf32>)\n"
             "  linalg.batch_matmul\n"
             "      ins(%q, %k : memref<4x3x5xf32>, memref<4x5x3xf32>)\n"
             "      outs(%acc : memref<4x3x3xf32>)\n"
             "  %e = memref.expand_shape %acc [[0, 1], [2], [3]]\n"
             "      output_shape [2, 2, 3, 3]\n"
             "      : memref<4x3x3xf32> into memref<2x2x3x3xf32>\n"
             "  linalg.transpose ins(%e : memref<2x2x3x3xf32>)\n"
             "      outs(%out : memref<") +
         outType + "xf32>) permutation = " + permutation + "\n";
}

TEST_F(ProductFusion, OutputTranspose) {
  auto module = parse(kHeadsArgs, scoresIntoSequence("[0, 2, 1, 3]"));
  auto product = first<linalg::BatchMatmulOp>(*module);
  EXPECT_EQ(findOutputTranspose(product), first<linalg::TransposeOp>(*module));
}

TEST_F(ProductFusion, NoOutputTransposeWhenReadLater) {
  auto module = parse(
      std::string(kHeadsArgs) + ", %keep: memref<4x3x3xf32>",
      scoresIntoSequence("[0, 2, 1, 3]") +
          "  memref.copy %acc, %keep : memref<4x3x3xf32> to memref<4x3x3xf32>");
  EXPECT_FALSE(findOutputTranspose(first<linalg::BatchMatmulOp>(*module)));
}

TEST_F(ProductFusion, NoOutputTransposeOfOtherPermutations) {
  auto module = parse("%q: memref<4x3x5xf32>, %k: memref<4x5x3xf32>, "
                      "%out: memref<2x2x3x3xf32>",
                      scoresIntoSequence("[1, 0, 2, 3]", "2x2x3x3"));
  EXPECT_FALSE(findOutputTranspose(first<linalg::BatchMatmulOp>(*module)));
}

const char *kSequenceArgs = "%do: memref<2x3x2x5xf32>, %v: memref<4x5x7xf32>, "
                            "%dp: memref<4x3x7xf32>";
const char *kHeads =
    "  %heads = memref.alloc() : memref<2x2x3x5xf32>\n"
    "  linalg.transpose ins(%do : memref<2x3x2x5xf32>)\n"
    "      outs(%heads : memref<2x2x3x5xf32>) permutation = [0, 2, 1, 3]\n"
    "  %c = memref.collapse_shape %heads [[0, 1], [2], [3]]\n"
    "      : memref<2x2x3x5xf32> into memref<4x3x5xf32>\n";
const char *kReadHeads =
    "  linalg.batch_matmul ins(%c, %v : memref<4x3x5xf32>, memref<4x5x7xf32>)\n"
    "      outs(%dp : memref<4x3x7xf32>)\n";

TEST_F(ProductFusion, HeadsOperand) {
  auto module = parse(kSequenceArgs, std::string(kHeads) + kReadHeads);
  auto transpose = first<linalg::TransposeOp>(*module);
  auto collapse = first<memref::CollapseShapeOp>(*module);
  EXPECT_EQ(findHeadsOperand(transpose, [](Operation *) { return true; }),
            collapse);
  // Only products the target takes.
  EXPECT_FALSE(findHeadsOperand(transpose, [](Operation *) { return false; }));
}

TEST_F(ProductFusion, NoHeadsOperandPastAWriteOfTheSource) {
  // The product would read dO after the fill overwrote it.
  auto module =
      parse(kSequenceArgs, std::string(kHeads) +
                               "  linalg.fill ins(%zero : f32) outs(%do : "
                               "memref<2x3x2x5xf32>)\n" +
                               kReadHeads);
  EXPECT_FALSE(findHeadsOperand(first<linalg::TransposeOp>(*module),
                                [](Operation *) { return true; }));
}

} // namespace
