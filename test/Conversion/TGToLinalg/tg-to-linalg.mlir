// convert-tg-to-linalg: matrix products become named matmuls (with
// materialised transposes), elementwise ops linalg.generic, nothing tg left.
// RUN: tgc-opt %s --convert-tg-to-linalg --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @linear
// CHECK: %[[WT:.*]] = linalg.transpose ins(%{{.*}} : tensor<6x8xf32>) outs(%{{.*}} : tensor<8x6xf32>) permutation = [1, 0]
// CHECK: linalg.matmul ins(%{{.*}}, %[[WT]] : tensor<4x8xf32>, tensor<8x6xf32>)
// CHECK-NOT: tg.
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<6x8xf32>, %b: tensor<6xf32>) -> tensor<4x6xf32> {
  %y = tg.linear %x, %w, %b : tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// Batched rows times a shared matrix fold into one 2-D matmul.
// CHECK-LABEL: func.func @matmul_shared
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<6x4xf32>, tensor<4x5xf32>)
func.func @matmul_shared(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %y = tg.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// -----

// CHECK-LABEL: func.func @relu_add
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.maximumf
func.func @relu_add(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %s = tg.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %r = tg.relu %s : tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// Attention: batched products over (batch, kv head), causal mask, softmax;
// no target-specific loop around the products.
// CHECK-LABEL: func.func @attention
// CHECK-NOT: scf.for
// CHECK: linalg.batch_matmul
// CHECK: arith.cmpi ugt
// CHECK: math.exp
// CHECK: linalg.batch_matmul
func.func @attention(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x1x8xf32>) -> tensor<1x4x2x8xf32> {
  %o, %o_lse = tg.attention %q, %k, %k {causal} : tensor<1x4x2x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32> -> tensor<1x4x2x8xf32>, tensor<1x4x2xf32>
  return %o : tensor<1x4x2x8xf32>
}

// -----

// The scatter-add of the embedding gradient is a loop over positions.
// CHECK-LABEL: func.func @embedding_grad
// CHECK: linalg.fill
// CHECK: scf.for
// CHECK: arith.index_cast
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.insert_slice
func.func @embedding_grad(%g: tensor<2x3x4xf32>, %ids: tensor<2x3xi32>) -> tensor<5x4xf32> {
  %d = tg.embedding_grad %g, %ids : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<5x4xf32>
  return %d : tensor<5x4xf32>
}

// -----

// A narrow product (a classifier's 10 columns) stays a plain matmul: the
// layout for a target's vector unit is that target's business.
// CHECK-LABEL: func.func @narrow
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<32x10xf32>)
func.func @narrow(%a: tensor<64x32xf32>, %b: tensor<32x10xf32>) -> tensor<64x10xf32> {
  %y = tg.matmul %a, %b : tensor<64x32xf32>, tensor<32x10xf32> -> tensor<64x10xf32>
  return %y : tensor<64x10xf32>
}

// -----

// Mixed precision: bf16 operands accumulate into an f32 matmul (linalg's
// named op widens its inputs), an f32 bias is the accumulator's start; a
// bf16 result is accumulated in f32 and rounded once; tg.cast is truncf /
// extf.
// CHECK-LABEL: func.func @mixed_linear
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[WT:.*]] = linalg.transpose ins(%{{.*}} : tensor<6x8xbf16>) outs(%{{.*}} : tensor<8x6xbf16>)
// CHECK: linalg.matmul ins(%{{.*}}, %[[WT]] : tensor<4x8xbf16>, tensor<8x6xbf16>) outs(%{{.*}} : tensor<4x6xf32>)
// CHECK-NOT: tg.
func.func @mixed_linear(%x: tensor<4x8xf32>, %w: tensor<6x8xbf16>) -> tensor<4x6xf32> {
  %xl = tg.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  %y = tg.linear %xl, %w : tensor<4x8xbf16>, tensor<6x8xbf16> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// A saved activation's low-precision copy (tg-low-precision-saves) keeps its
// mark on the generic, for tgc-fuse-elementwise; other casts have none.
// CHECK-LABEL: func.func @saved_copy
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK-SAME: tgc.saved_copy
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK-NOT: tgc.saved_copy
func.func @saved_copy(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = tg.cast %x {tg.saved_copy} : tensor<4x8xf32> -> tensor<4x8xbf16>
  %w = tg.cast %s : tensor<4x8xbf16> -> tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @bf16_result
// CHECK: %[[ACC:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x6xbf16>) outs(%{{.*}} : tensor<4x6xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[ACC]] : tensor<4x6xf32>) outs(%{{.*}} : tensor<4x6xbf16>)
// CHECK: arith.truncf
func.func @bf16_result(%a: tensor<4x8xbf16>, %b: tensor<8x6xbf16>) -> tensor<4x6xbf16> {
  %c = tg.matmul %a, %b : tensor<4x8xbf16>, tensor<8x6xbf16> -> tensor<4x6xbf16>
  return %c : tensor<4x6xbf16>
}

// -----

// Batched products with their own maps: the generic widens each operand.
// CHECK-LABEL: func.func @mixed_batched
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<2x4x8xbf16>, tensor<2x6x8xbf16>) outs(%{{.*}} : tensor<2x4x6xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @mixed_batched(%q: tensor<2x4x8xbf16>, %k: tensor<2x6x8xbf16>) -> tensor<2x4x6xf32> {
  %s = tg.matmul %q, %k {transpose_rhs} : tensor<2x4x8xbf16>, tensor<2x6x8xbf16> -> tensor<2x4x6xf32>
  return %s : tensor<2x4x6xf32>
}

// -----

// Arithmetic on bf16 values (a bf16 value's gradients summed) computes in
// f32 and rounds once.
// CHECK-LABEL: func.func @bf16_add
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.truncf %[[S]] : f32 to bf16
func.func @bf16_add(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %s = tg.add %a, %b : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  return %s : tensor<4x8xbf16>
}

// -----

// The update guard's flag: |n| < inf fails for inf and NaN alike.
// CHECK-LABEL: func.func @not_finite
// CHECK: linalg.generic
// CHECK: %[[ABS:.*]] = math.absf %{{.*}} : f32
// CHECK: %[[FINITE:.*]] = arith.cmpf olt, %[[ABS]], %{{.*}} : f32
// CHECK: %[[NOT:.*]] = arith.xori %[[FINITE]], %true
// CHECK: arith.select %[[NOT]], %cst{{.*}}, %cst{{.*}} : f32
func.func @not_finite(%n: tensor<f32>) -> tensor<f32> {
  %s = tg.not_finite %n : tensor<f32>
  return %s : tensor<f32>
}

// -----

// Reshapes: one collapse or expand where one does it; else through the
// finest shape both coarsen (never through one flat dimension, whose memref
// views the CPU schedule's alias folding does not converge on); else
// through 1-D.
// CHECK-LABEL: func.func @reshapes
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2, 3]] : tensor<2x11x1x16xf32> into tensor<22x16xf32>
// CHECK: %[[FINE:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [22, 5, 16] : tensor<110x16xf32> into tensor<22x5x16xf32>
// CHECK: tensor.collapse_shape %[[FINE]] {{\[}}[0], [1, 2]] : tensor<22x5x16xf32> into tensor<22x80xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<6x4xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
func.func @reshapes(%a: tensor<2x11x1x16xf32>, %b: tensor<110x16xf32>, %c: tensor<6x4xf32>) -> (tensor<22x16xf32>, tensor<22x80xf32>, tensor<4x6xf32>) {
  %ra = tg.reshape %a : tensor<2x11x1x16xf32> -> tensor<22x16xf32>
  %rb = tg.reshape %b : tensor<110x16xf32> -> tensor<22x80xf32>
  %rc = tg.reshape %c : tensor<6x4xf32> -> tensor<4x6xf32>
  return %ra, %rb, %rc : tensor<22x16xf32>, tensor<22x80xf32>, tensor<4x6xf32>
}
