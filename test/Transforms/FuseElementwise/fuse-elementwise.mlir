// RUN: tgc-opt %s --split-input-file --tgc-fuse-elementwise --canonicalize | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A producer read by one generic is fused into it: one loop.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @chain(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// SiLU read by two generics: cheap (five ops, one input as large as its
// result), so each reader recomputes it; the SiLU's own result is never
// stored. The two readers then share their inputs and are siblings: one
// loop with both results.
// CHECK-LABEL: func.func @cheap_producer
// CHECK: %[[R:.*]]:2 = linalg.generic
// CHECK-COUNT-2: math.exp
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @cheap_producer(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %d: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %silu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %r = arith.divf %x, %den : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%silu, %u : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %du = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%silu, %d : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %h, %du : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A sum of three tensors read by three generics is not recomputed in each
// (they would read nine tensors instead of seven). The three readers are
// siblings (they share the sum): one loop with three results, the sum's
// only reader, into which the sum then fuses: six tensors in all.
// CHECK-LABEL: func.func @costly_producer
// CHECK: %[[R:.*]]:3 = linalg.generic {{.*}} ins(%arg0, %arg1, %arg2 :
// CHECK-COUNT-2: arith.addf
// CHECK-NOT: arith.addf
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @costly_producer(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b, %c : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %r0 = arith.addf %x, %y : f32
    %r = arith.addf %r0, %z : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.tanh %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %p, %q, %t : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Siblings over the same loops, one a row reduction, read %a: one loop with
// both results, placed at the later one.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @siblings(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %sa = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.addf %x, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %sab = linalg.generic {indexing_maps = [#id, #id, #row], iterator_types = ["parallel", "reduction"]} ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %m, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %sa, %sab : tensor<4xf32>, tensor<4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Not siblings: the earlier one's result is read (by a matmul) before the
// later one.
// CHECK-LABEL: func.func @used_between
// CHECK: linalg.generic
// CHECK: linalg.matmul
// CHECK: linalg.generic
func.func @used_between(%a: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %e = tensor.empty() : tensor<8x8xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %m = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %m : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%v: f32, %u: f32, %o: f32):
    %r = arith.mulf %v, %u : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %m, %y : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// SwiGLU's backward: the recomputed silu(g)·u is read by the down
// projection's weight-gradient product before the gradient loop, which
// reads g and u too and whose inputs (dh) exist before the recompute. The
// two fuse at the earlier one (g and u read once); the product follows.
// CHECK-LABEL: func.func @siblings_at_earlier
// CHECK: %[[F:.*]]:3 = linalg.generic
// CHECK: linalg.matmul ins(%[[F]]#0,
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @siblings_at_earlier(%g: tensor<8x8xf32>, %u: tensor<8x8xf32>, %dh: tensor<8x8xf32>, %dy: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%g, %u : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = math.exp %a : f32
    %r = arith.mulf %s, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %dw = linalg.matmul ins(%h, %dy : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e3 = tensor.empty() : tensor<8x8xf32>
  %e4 = tensor.empty() : tensor<8x8xf32>
  %grads:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%dh, %g, %u : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) outs(%e3, %e4 : tensor<8x8xf32>, tensor<8x8xf32>) {
  ^bb0(%d: f32, %a: f32, %b: f32, %o: f32, %o2: f32):
    %s = math.exp %a : f32
    %du = arith.mulf %d, %s : f32
    %dg = arith.mulf %d, %b : f32
    linalg.yield %du, %dg : f32, f32
  } -> (tensor<8x8xf32>, tensor<8x8xf32>)
  return %dw, %grads#0, %grads#1 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Not fused: between the two runs a product that does not read the
// earlier's result; hoisting the later above it would keep its results
// alive across unrelated work (a gradient's norm moved into the forward).
// CHECK-LABEL: func.func @unrelated_between
// CHECK: linalg.generic
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: linalg.generic
func.func @unrelated_between(%g: tensor<8x8xf32>, %dh: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %e = tensor.empty() : tensor<8x8xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %p = linalg.matmul ins(%h, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = linalg.matmul ins(%dh, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%dh, %g : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e2 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %p, %q, %d : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// In a loop, a running value updated in place (its tensor the destination
// of the update) keeps its old value's readers before the update: the
// producer of %old's use is not moved past the in-place write.
// CHECK-LABEL: func.func @in_place_between
// CHECK: scf.for
// CHECK: %[[D:[0-9]+]] = linalg.generic {{.*}} ins(%[[OLD:[a-z0-9_]+]] : tensor<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<8xf32>) outs(%[[OLD]] : tensor<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[D]]
func.func @in_place_between(%a: tensor<8xf32>, %init: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty() : tensor<8xf32>
  %r:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%old = %init, %acc = %a) -> (tensor<8xf32>, tensor<8xf32>) {
    %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%old : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%v: f32, %o: f32):
      %x = math.exp %v : f32
      linalg.yield %x : f32
    } -> tensor<8xf32>
    %new = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%acc : tensor<8xf32>) outs(%old : tensor<8xf32>) {
    ^bb0(%v: f32, %o: f32):
      %x = arith.maximumf %v, %o : f32
      linalg.yield %x : f32
    } -> tensor<8xf32>
    %next = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%d, %new : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%v: f32, %u: f32, %o: f32):
      %x = arith.mulf %v, %u : f32
      linalg.yield %x : f32
    } -> tensor<8xf32>
    scf.yield %new, %next : tensor<8xf32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Attention's output, normalised per row in [heads, S·G, D] and changed to
// the sequence's layout through a reshape to [heads, S, G, D]: the reshape
// is folded into the loop (its dimensions expanded) so that the layout
// change fuses with it: one loop writes [S, heads, G, D], no transpose.
// CHECK-LABEL: func.func @reshape_then_layout
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<6x2x3x4xf32>)
// CHECK: arith.mulf
// CHECK-NOT: linalg.transpose
// CHECK: return %[[R]]
func.func @reshape_then_layout(%x: tensor<2x18x4xf32>) -> tensor<6x2x3x4xf32> {
  %e = tensor.empty() : tensor<2x18x4xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x18x4xf32>) outs(%e : tensor<2x18x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.mulf %v, %v : f32
    linalg.yield %r : f32
  } -> tensor<2x18x4xf32>
  %s = tensor.expand_shape %n [[0], [1, 2], [3]] output_shape [2, 6, 3, 4] : tensor<2x18x4xf32> into tensor<2x6x3x4xf32>
  %t0 = tensor.empty() : tensor<6x2x3x4xf32>
  %t = linalg.transpose ins(%s : tensor<2x6x3x4xf32>) outs(%t0 : tensor<6x2x3x4xf32>) permutation = [1, 0, 2, 3]
  return %t : tensor<6x2x3x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A reshape between two elementwise loops with no layout change is left
// alone (the folding is only for layout changes).
// CHECK-LABEL: func.func @reshape_elsewhere
// CHECK: tensor.expand_shape
func.func @reshape_elsewhere(%x: tensor<4x6xf32>, %w: tensor<2x3x5xf32>) -> tensor<4x2x3xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %s = tensor.expand_shape %n [[0], [1, 2]] output_shape [4, 2, 3] : tensor<4x6xf32> into tensor<4x2x3xf32>
  return %s : tensor<4x2x3xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

// Not siblings: sharing a 0-d tensor (two parameters' updates reading the
// learning rate) saves nothing and would delay the first update.
// CHECK-LABEL: func.func @share_scalar
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%arg0, %arg2 :
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%arg1, %arg2 :
// CHECK: return %[[P]], %[[Q]]
func.func @share_scalar(%p: tensor<8xf32>, %q: tensor<8xf32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %np = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]} ins(%p, %lr : tensor<8xf32>, tensor<f32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %y = arith.mulf %x, %r : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %nq = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]} ins(%q, %lr : tensor<8xf32>, tensor<f32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %y = arith.mulf %x, %r : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  return %np, %nq : tensor<8xf32>, tensor<8xf32>
}

// -----

// A sum of three products read through reshapes (the gradient of a tensor
// read by the Q, K and V projections): each later product accumulates into
// the earlier one's output, and the sum's loop goes.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @summed_products
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: %[[P1:.*]] = linalg.matmul ins(%arg0, %arg3 : {{.*}}) outs(%[[FILL]] :
// CHECK: %[[P2:.*]] = linalg.matmul ins(%arg1, %arg4 : {{.*}}) outs(%[[P1]] :
// CHECK: %[[P3:.*]] = linalg.matmul ins(%arg2, %arg5 : {{.*}}) outs(%[[P2]] :
// CHECK-NOT: linalg.generic
// CHECK: %[[R:.*]] = tensor.expand_shape %[[P3]] {{\[}}[0, 1], [2]] output_shape [2, 3, 8]
// CHECK: return %[[R]]
func.func @summed_products(%a1: tensor<6x4xf32>, %a2: tensor<6x4xf32>, %a3: tensor<6x4xf32>, %w1: tensor<4x8xf32>, %w2: tensor<4x8xf32>, %w3: tensor<4x8xf32>) -> tensor<2x3x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
  %p1 = linalg.matmul ins(%a1, %w1 : tensor<6x4xf32>, tensor<4x8xf32>) outs(%f1 : tensor<6x8xf32>) -> tensor<6x8xf32>
  %x1 = tensor.expand_shape %p1 [[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xf32> into tensor<2x3x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
  %p2 = linalg.matmul ins(%a2, %w2 : tensor<6x4xf32>, tensor<4x8xf32>) outs(%f2 : tensor<6x8xf32>) -> tensor<6x8xf32>
  %x2 = tensor.expand_shape %p2 [[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xf32> into tensor<2x3x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
  %p3 = linalg.matmul ins(%a3, %w3 : tensor<6x4xf32>, tensor<4x8xf32>) outs(%f3 : tensor<6x8xf32>) -> tensor<6x8xf32>
  %x3 = tensor.expand_shape %p3 [[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xf32> into tensor<2x3x8xf32>
  %o = tensor.empty() : tensor<2x3x8xf32>
  %s = linalg.generic {indexing_maps = [#id3, #id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x3, %x2, %x1 : tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) outs(%o : tensor<2x3x8xf32>) {
  ^bb0(%u: f32, %v: f32, %w: f32, %out: f32):
    %t = arith.addf %u, %v : f32
    %r = arith.addf %t, %w : f32
    linalg.yield %r : f32
  } -> tensor<2x3x8xf32>
  return %s : tensor<2x3x8xf32>
}

// -----

// One product read twice (also by the return): its output must stay, so
// the sum stays.
#id3b = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @product_read_elsewhere
// CHECK: %[[F:.*]] = linalg.fill
// CHECK: linalg.matmul {{.*}} outs(%[[F]] :
// CHECK: linalg.matmul {{.*}} outs(%[[F]] :
// CHECK: linalg.generic
func.func @product_read_elsewhere(%a1: tensor<6x4xf32>, %a2: tensor<6x4xf32>, %w: tensor<4x8xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
  %p1 = linalg.matmul ins(%a1, %w : tensor<6x4xf32>, tensor<4x8xf32>) outs(%f : tensor<6x8xf32>) -> tensor<6x8xf32>
  %p2 = linalg.matmul ins(%a2, %w : tensor<6x4xf32>, tensor<4x8xf32>) outs(%f : tensor<6x8xf32>) -> tensor<6x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p1, %p2 : tensor<6x8xf32>, tensor<6x8xf32>) outs(%e : tensor<6x8xf32>) {
  ^bb0(%u: f32, %v: f32, %out: f32):
    %r = arith.addf %u, %v : f32
    linalg.yield %r : f32
  } -> tensor<6x8xf32>
  return %s, %p1 : tensor<6x8xf32>, tensor<6x8xf32>
}

// -----

// An elementwise loop reading a row task's rows (a norm's input gradient,
// summed with the residual stream's other gradient) runs in the task: the
// other input is sliced like the rows, and the task inserts the sum.
#id3c = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2c = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @consumer_into_tasks
// CHECK-SAME: (%[[X:.*]]: tensor<6x8xf32>, %[[OTHER:.*]]: tensor<2x3x8xf32>)
// CHECK: %[[OTHER2:.*]] = tensor.collapse_shape %[[OTHER]] {{\[}}[0, 1], [2]]
// CHECK: %[[R:.*]] = scf.forall (%[[T:.*]]) in (2) shared_outs(%[[OUT:.*]] = %{{.*}})
// CHECK:   %[[ROW:.*]] = arith.muli %[[T]], %c3
// CHECK:   %[[NEG:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<3x8xf32>)
// CHECK:   %[[OT:.*]] = tensor.extract_slice %[[OTHER2]][%[[ROW]], 0] [3, 8] [1, 1]
// CHECK:   %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[OT]], %[[NEG]] : tensor<3x8xf32>, tensor<3x8xf32>)
// CHECK:     arith.addf
// CHECK:   tensor.parallel_insert_slice %[[SUM]] into %[[OUT]][%[[ROW]], 0] [3, 8] [1, 1]
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[E]]
func.func @consumer_into_tasks(%x: tensor<6x8xf32>, %other: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %c3 = arith.constant 3 : index
  %e = tensor.empty() : tensor<6x8xf32>
  %rows = scf.forall (%t) in (2) shared_outs(%out = %e) -> (tensor<6x8xf32>) {
    %row = arith.muli %t, %c3 : index
    %xt = tensor.extract_slice %x[%row, 0] [3, 8] [1, 1] : tensor<6x8xf32> to tensor<3x8xf32>
    %te = tensor.empty() : tensor<3x8xf32>
    %neg = linalg.generic {indexing_maps = [#id2c, #id2c], iterator_types = ["parallel", "parallel"]} ins(%xt : tensor<3x8xf32>) outs(%te : tensor<3x8xf32>) {
    ^bb0(%in: f32, %o: f32):
      %n = arith.negf %in : f32
      linalg.yield %n : f32
    } -> tensor<3x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %neg into %out[%row, 0] [3, 8] [1, 1] : tensor<3x8xf32> into tensor<6x8xf32>
    }
  }
  %full = tensor.expand_shape %rows [[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xf32> into tensor<2x3x8xf32>
  %o = tensor.empty() : tensor<2x3x8xf32>
  %sum = linalg.generic {indexing_maps = [#id3c, #id3c, #id3c], iterator_types = ["parallel", "parallel", "parallel"]} ins(%other, %full : tensor<2x3x8xf32>, tensor<2x3x8xf32>) outs(%o : tensor<2x3x8xf32>) {
  ^bb0(%u: f32, %v: f32, %out: f32):
    %r = arith.addf %u, %v : f32
    linalg.yield %r : f32
  } -> tensor<2x3x8xf32>
  return %sum : tensor<2x3x8xf32>
}

// -----

// Rows read twice (the sum and the return) stay where the tasks write them.
#id3d = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @task_rows_read_twice
// CHECK: scf.forall
// CHECK-NOT: arith.addf
// CHECK: scf.forall.in_parallel
// CHECK: linalg.generic
// CHECK:   arith.addf
func.func @task_rows_read_twice(%x: tensor<6x8xf32>, %other: tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %c3 = arith.constant 3 : index
  %e = tensor.empty() : tensor<6x8xf32>
  %rows = scf.forall (%t) in (2) shared_outs(%out = %e) -> (tensor<6x8xf32>) {
    %row = arith.muli %t, %c3 : index
    %xt = tensor.extract_slice %x[%row, 0] [3, 8] [1, 1] : tensor<6x8xf32> to tensor<3x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %xt into %out[%row, 0] [3, 8] [1, 1] : tensor<3x8xf32> into tensor<6x8xf32>
    }
  }
  %full = tensor.expand_shape %rows [[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xf32> into tensor<2x3x8xf32>
  %o = tensor.empty() : tensor<2x3x8xf32>
  %sum = linalg.generic {indexing_maps = [#id3d, #id3d, #id3d], iterator_types = ["parallel", "parallel", "parallel"]} ins(%other, %full : tensor<2x3x8xf32>, tensor<2x3x8xf32>) outs(%o : tensor<2x3x8xf32>) {
  ^bb0(%u: f32, %v: f32, %out: f32):
    %r = arith.addf %u, %v : f32
    linalg.yield %r : f32
  } -> tensor<2x3x8xf32>
  return %sum, %full : tensor<2x3x8xf32>, tensor<2x3x8xf32>
}

// -----

// A producer that reads a tensor in its body (the fused loss's gather of
// each row's target logit) is not fused past an op that overwrites that
// tensor in place (the exponentials written over the logits): the gather
// stays before it, and the logits need no copy.
#col = affine_map<(d0) -> (d0)>
#full2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @gather_before_overwrite
// CHECK: %[[PICKED:.*]] = linalg.generic
// CHECK:   tensor.extract %[[L:.*]][
// CHECK: linalg.generic {{.*}} outs(%[[L]] : tensor<4x3xf32>)
// CHECK:   math.exp
// CHECK: linalg.generic {{.*}} ins(%[[PICKED]] : tensor<3xf32>)
func.func @gather_before_overwrite(%logits: tensor<4x3xf32>, %t: tensor<3xindex>) -> (tensor<4x3xf32>, tensor<3xf32>) {
  %e = tensor.empty() : tensor<3xf32>
  %picked = linalg.generic {indexing_maps = [#col, #col], iterator_types = ["parallel"]} ins(%t : tensor<3xindex>) outs(%e : tensor<3xf32>) {
  ^bb0(%i: index, %o: f32):
    %r = linalg.index 0 : index
    %v = tensor.extract %logits[%i, %r] : tensor<4x3xf32>
    linalg.yield %v : f32
  } -> tensor<3xf32>
  %exps = linalg.generic {indexing_maps = [#full2], iterator_types = ["parallel", "parallel"]} outs(%logits : tensor<4x3xf32>) {
  ^bb0(%o: f32):
    %x = math.exp %o : f32
    linalg.yield %x : f32
  } -> tensor<4x3xf32>
  %e2 = tensor.empty() : tensor<3xf32>
  %neg = linalg.generic {indexing_maps = [#col, #col], iterator_types = ["parallel"]} ins(%picked : tensor<3xf32>) outs(%e2 : tensor<3xf32>) {
  ^bb0(%p: f32, %o: f32):
    %n = arith.negf %p : f32
    linalg.yield %n : f32
  } -> tensor<3xf32>
  return %exps, %neg : tensor<4x3xf32>, tensor<3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A saved activation's bf16 copy (tgc.saved_copy) made in the forward pass
// and widened in the reverse graph stays a loop of its own: fused into the
// widening, the f32 input would be read there instead and stay alive
// across the step at twice the bytes. The same pair without the mark is
// one loop (rounding in place).
// CHECK-LABEL: func.func @saved_copy
// CHECK: %[[COPY:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK-SAME: tgc.saved_copy
// CHECK: arith.truncf
// CHECK: linalg.generic {{.*}} ins(%[[COPY]] : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.extf
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.truncf
// CHECK: arith.extf
// CHECK-NOT: linalg.generic
func.func @saved_copy(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %el = tensor.empty() : tensor<4x8xbf16>
  %e = tensor.empty() : tensor<4x8xf32>
  %copy = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%el : tensor<4x8xbf16>) attrs = {tgc.saved_copy} {
  ^bb0(%x: f32, %o: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x8xbf16>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%copy : tensor<4x8xbf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %r = arith.extf %x : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %round = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x8xf32>) outs(%el : tensor<4x8xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x8xbf16>
  %back = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%round : tensor<4x8xbf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %r = arith.extf %x : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %wide, %back : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#idc = affine_map<(d0, d1) -> (d0, d1)>

// A saved copy joins its input's next reader as a sibling where only fresh
// tensors lie between (the up projection's copy and silu(g)·u): the f32
// input lives no longer, and one loop (the product's epilogue once
// bufferized) writes both. Past real work (the matmul in @saved_copy_stays)
// it stays where the forward pass made it.
// CHECK-LABEL: func.func @saved_copy_joins_next_reader
// CHECK: %[[BOTH:.*]]:2 = linalg.generic {{.*}} ins(%arg1, %arg0 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<4x8xbf16>)
// CHECK-SAME: tgc.saved_copy
// CHECK-NOT: linalg.generic
// CHECK: return %[[BOTH]]#0, %[[BOTH]]#1
// CHECK-LABEL: func.func @saved_copy_stays
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK-SAME: tgc.saved_copy
// CHECK: linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>)
func.func @saved_copy_joins_next_reader(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %e1 = tensor.empty() : tensor<4x8xbf16>
  %copy = linalg.generic {indexing_maps = [#idc, #idc], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<4x8xf32>) outs(%e1 : tensor<4x8xbf16>) attrs = {tgc.saved_copy} {
  ^bb0(%x: f32, %o: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x8xbf16>
  %e2 = tensor.empty() : tensor<4x8xbf16>
  %h = linalg.generic {indexing_maps = [#idc, #idc, #idc], iterator_types = ["parallel", "parallel"]} ins(%g, %u : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xbf16>) {
  ^bb0(%x: f32, %y: f32, %o: bf16):
    %n = arith.negf %x : f32
    %ex = math.exp %n : f32
    %one = arith.constant 1.0 : f32
    %d = arith.addf %ex, %one : f32
    %s = arith.divf %x, %d : f32
    %p = arith.mulf %s, %y : f32
    %r = arith.truncf %p : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x8xbf16>
  return %copy, %h : tensor<4x8xbf16>, tensor<4x8xbf16>
}
func.func @saved_copy_stays(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xbf16>) {
  %e1 = tensor.empty() : tensor<4x8xbf16>
  %copy = linalg.generic {indexing_maps = [#idc, #idc], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<4x8xf32>) outs(%e1 : tensor<4x8xbf16>) attrs = {tgc.saved_copy} {
  ^bb0(%x: f32, %o: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x8xbf16>
  %ef = tensor.empty() : tensor<4x8xf32>
  %mm = linalg.matmul ins(%g, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%ef : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xbf16>
  %h = linalg.generic {indexing_maps = [#idc, #idc, #idc], iterator_types = ["parallel", "parallel"]} ins(%g, %u : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xbf16>) {
  ^bb0(%x: f32, %y: f32, %o: bf16):
    %p = arith.mulf %x, %y : f32
    %r = arith.truncf %p : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x8xbf16>
  return %copy, %mm, %h : tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xbf16>
}

// -----

// A cast widening a saved bf16 copy, read only by parallel tasks (through
// a reshape made outside them: the norms' tasks over rows), is no pass of
// its own: each task slices the bf16 tensor, a loop reading the slice
// widens each element as it reads it, and another reader (a named op)
// reads the slice widened in the task.
#id3w = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2w = affine_map<(d0, d1) -> (d0, d1)>
#rowsum = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @widening_into_tasks
// CHECK-SAME: (%[[SAVED:.*]]: tensor<2x3x8xbf16>)
// CHECK-NOT: arith.extf
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[SAVED]] {{\[}}[0, 1], [2]] : tensor<2x3x8xbf16> into tensor<6x8xbf16>
// CHECK: scf.forall
// CHECK:   %[[SLICE:.*]] = tensor.extract_slice %[[ROWS]][%{{.*}}, 0] [3, 8] [1, 1] : tensor<6x8xbf16> to tensor<3x8xbf16>
// CHECK:   %[[WIDE:.*]] = linalg.generic {{.*}} ins(%[[SLICE]] : tensor<3x8xbf16>) outs(%{{.*}} : tensor<3x8xf32>)
// CHECK:     arith.extf
// CHECK:   linalg.copy ins(%[[WIDE]] : tensor<3x8xf32>)
// CHECK:   linalg.generic {{.*}} ins(%[[SLICE]] : tensor<3x8xbf16>) outs(%{{.*}} : tensor<3xf32>)
// CHECK:   ^bb0(%[[IN:.*]]: bf16, %[[ACC:.*]]: f32):
// CHECK:     %[[X:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK:     arith.mulf %[[X]], %[[X]] : f32
// CHECK: return
func.func @widening_into_tasks(%saved: tensor<2x3x8xbf16>) -> (tensor<6x8xf32>, tensor<6xf32>) {
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %we = tensor.empty() : tensor<2x3x8xf32>
  %wide = linalg.generic {indexing_maps = [#id3w, #id3w], iterator_types = ["parallel", "parallel", "parallel"]} ins(%saved : tensor<2x3x8xbf16>) outs(%we : tensor<2x3x8xf32>) {
  ^bb0(%in: bf16, %o: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<2x3x8xf32>
  %rows = tensor.collapse_shape %wide [[0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
  %e = tensor.empty() : tensor<6x8xf32>
  %s = tensor.empty() : tensor<6xf32>
  %r:2 = scf.forall (%t) in (2) shared_outs(%out = %e, %sums = %s) -> (tensor<6x8xf32>, tensor<6xf32>) {
    %row = arith.muli %t, %c3 : index
    %xt = tensor.extract_slice %rows[%row, 0] [3, 8] [1, 1] : tensor<6x8xf32> to tensor<3x8xf32>
    %ce = tensor.empty() : tensor<3x8xf32>
    %copy = linalg.copy ins(%xt : tensor<3x8xf32>) outs(%ce : tensor<3x8xf32>) -> tensor<3x8xf32>
    %se = tensor.empty() : tensor<3xf32>
    %sf = linalg.fill ins(%zero : f32) outs(%se : tensor<3xf32>) -> tensor<3xf32>
    %sq = linalg.generic {indexing_maps = [#id2w, #rowsum], iterator_types = ["parallel", "reduction"]} ins(%xt : tensor<3x8xf32>) outs(%sf : tensor<3xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %m = arith.mulf %in, %in : f32
      %a = arith.addf %acc, %m : f32
      linalg.yield %a : f32
    } -> tensor<3xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %copy into %out[%row, 0] [3, 8] [1, 1] : tensor<3x8xf32> into tensor<6x8xf32>
      tensor.parallel_insert_slice %sq into %sums[%row] [3] [1] : tensor<3xf32> into tensor<6xf32>
    }
  }
  return %r#0, %r#1 : tensor<6x8xf32>, tensor<6xf32>
}

// -----

// Read outside the tasks too (here returned), the f32 copy is made once
// and the tasks read it.
#id2v = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @widening_read_outside_tasks
// CHECK: %[[WIDE:.*]] = linalg.generic
// CHECK:   arith.extf
// CHECK: scf.forall
// CHECK:   tensor.extract_slice %[[WIDE]]
// CHECK-NOT: arith.extf
// CHECK: return
func.func @widening_read_outside_tasks(%saved: tensor<6x8xbf16>) -> (tensor<6x8xf32>, tensor<6x8xf32>) {
  %c3 = arith.constant 3 : index
  %we = tensor.empty() : tensor<6x8xf32>
  %wide = linalg.generic {indexing_maps = [#id2v, #id2v], iterator_types = ["parallel", "parallel"]} ins(%saved : tensor<6x8xbf16>) outs(%we : tensor<6x8xf32>) {
  ^bb0(%in: bf16, %o: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<6x8xf32>
  %e = tensor.empty() : tensor<6x8xf32>
  %r = scf.forall (%t) in (2) shared_outs(%out = %e) -> (tensor<6x8xf32>) {
    %row = arith.muli %t, %c3 : index
    %xt = tensor.extract_slice %wide[%row, 0] [3, 8] [1, 1] : tensor<6x8xf32> to tensor<3x8xf32>
    %ce = tensor.empty() : tensor<3x8xf32>
    %copy = linalg.copy ins(%xt : tensor<3x8xf32>) outs(%ce : tensor<3x8xf32>) -> tensor<3x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %copy into %out[%row, 0] [3, 8] [1, 1] : tensor<3x8xf32> into tensor<6x8xf32>
    }
  }
  return %r, %wide : tensor<6x8xf32>, tensor<6x8xf32>
}

// -----

// A loop reading the widened copy through a reshape (attention's
// rowsum(dO·O) reading the saved O as heads), which producer fusion does
// not follow, reads the bf16 tensor reshaped and widens as it reads.
#h5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#h5r = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
#id3r = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @widening_into_loop_through_reshape
// CHECK-SAME: (%[[SAVED:.*]]: tensor<2x3x8xbf16>, %[[DO:.*]]: tensor<2x3x2x1x4xf32>)
// CHECK: %[[HEADS:.*]] = tensor.expand_shape %[[SAVED]] {{\[}}[0], [1], [2, 3, 4]] output_shape [2, 3, 2, 1, 4] : tensor<2x3x8xbf16> into tensor<2x3x2x1x4xbf16>
// CHECK: linalg.generic {{.*}} ins(%[[DO]], %[[HEADS]] : tensor<2x3x2x1x4xf32>, tensor<2x3x2x1x4xbf16>)
// CHECK: ^bb0(%{{.*}}: f32, %[[O:.*]]: bf16, %{{.*}}: f32):
// CHECK:   arith.extf %[[O]] : bf16 to f32
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @widening_into_loop_through_reshape(%saved: tensor<2x3x8xbf16>, %do: tensor<2x3x2x1x4xf32>) -> tensor<2x2x3x1xf32> {
  %zero = arith.constant 0.0 : f32
  %we = tensor.empty() : tensor<2x3x8xf32>
  %wide = linalg.generic {indexing_maps = [#id3r, #id3r], iterator_types = ["parallel", "parallel", "parallel"]} ins(%saved : tensor<2x3x8xbf16>) outs(%we : tensor<2x3x8xf32>) {
  ^bb0(%in: bf16, %o: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<2x3x8xf32>
  %heads = tensor.expand_shape %wide [[0], [1], [2, 3, 4]] output_shape [2, 3, 2, 1, 4] : tensor<2x3x8xf32> into tensor<2x3x2x1x4xf32>
  %e = tensor.empty() : tensor<2x2x3x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x3x1xf32>) -> tensor<2x2x3x1xf32>
  %d = linalg.generic {indexing_maps = [#h5, #h5, #h5r], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %heads : tensor<2x3x2x1x4xf32>, tensor<2x3x2x1x4xf32>) outs(%f : tensor<2x2x3x1xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x2x3x1xf32>
  return %d : tensor<2x2x3x1xf32>
}
