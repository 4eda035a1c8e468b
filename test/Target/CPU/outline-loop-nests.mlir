// Each top-level loop nest becomes a private function of its own; constants
// and views are cloned in, so it takes root buffers. Arguments get
// llvm.noalias only when no other argument can share their storage: a
// parameter and its updated value (same tg.param name) may be one buffer,
// and such a nest gets a version for each case.
// RUN: tgc-opt %s --tgc-outline-loop-nests | FileCheck %s
// RUN: tgc-opt %s --tgc-outline-loop-nests | FileCheck %s --check-prefix=MERGE

// Distinct storage: both noalias; the subview is cloned in.
// CHECK-LABEL: func.func private @step_nest0(%{{[^:]*}}: memref<32xf32> {llvm.noalias}, %{{[^:]*}}: memref<16xf32> {llvm.noalias})
// CHECK-SAME: attributes {tgc.outlined}
// CHECK: memref.subview

// The parameter and its new value are one buffer (updated in place) or two
// distinct ones: @step_nest1 compares the pointers and calls a version for
// each, both noalias; in the in-place one the two are one argument, so
// LLVM's vectoriser needs no run-time alias check (it failed on equal
// pointers and ran the update's scalar loop).
// CHECK: func.func private @step_nest1(%[[OLD:[^:]*]]: memref<16xf32>, %[[NEW:[^:]*]]: memref<16xf32>)
// CHECK-SAME: attributes {tgc.outlined}
// CHECK: %[[P0:.*]] = memref.extract_aligned_pointer_as_index %[[OLD]]
// CHECK: %[[P1:.*]] = memref.extract_aligned_pointer_as_index %[[NEW]]
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[P0]], %[[P1]] : index
// CHECK: scf.if %[[SAME]] {
// CHECK-NEXT: func.call @step_nest1_in_place(%[[OLD]], %[[NEW]])
// CHECK-NEXT: } else {
// CHECK-NEXT: func.call @step_nest1_distinct(%[[OLD]], %[[NEW]])
// CHECK: func.func private @step_nest1_in_place(%[[W:[^:]*]]: memref<16xf32> {llvm.noalias}, %{{[^:]*}}: memref<16xf32> {llvm.noalias})
// CHECK: memref.load %[[W]]
// CHECK: memref.store %{{.*}}, %[[W]]
// CHECK: func.func private @step_nest1_distinct(%[[A:[^:]*]]: memref<16xf32> {llvm.noalias}, %[[B:[^:]*]]: memref<16xf32> {llvm.noalias})
// CHECK: memref.load %[[A]]
// CHECK: memref.store %{{.*}}, %[[B]]

// CHECK-LABEL: func.func @step
// CHECK: %[[T:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NOT: scf.for
// CHECK: call @step_nest0(%arg0, %[[T]])
// CHECK-NEXT: call @step_nest1(%arg1, %arg2)
// CHECK-NEXT: return
func.func @step(%x: memref<32xf32>,
                %w: memref<16xf32> {tg.param = "w"},
                %w_new: memref<16xf32> {tg.param = "w"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %t = memref.alloc() : memref<16xf32>
  %head = memref.subview %x[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %head[%i] : memref<16xf32, strided<[1]>>
    memref.store %v, %t[%i] : memref<16xf32>
  }
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %w[%i] : memref<16xf32>
    %two = arith.constant 2.0 : f32
    %u = arith.mulf %v, %two : f32
    memref.store %u, %w_new[%i] : memref<16xf32>
  }
  return
}

// Two pairs (a parameter and its optimizer state, as AdamW's loop takes
// them): both equal, both different, and otherwise the nest as it was
// (neither pair noalias).
// CHECK: func.func private @update_nest0(%{{[^:]*}}: memref<16xf32>, %{{[^:]*}}: memref<16xf32>, %{{[^:]*}}: memref<16xf32>, %{{[^:]*}}: memref<16xf32>)
// CHECK: %[[SAME:.*]] = arith.andi
// CHECK: %[[APART:.*]] = arith.andi
// CHECK: scf.if %[[SAME]] {
// CHECK-NEXT: func.call @update_nest0_in_place(
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.if %[[APART]] {
// CHECK-NEXT: func.call @update_nest0_distinct(
// CHECK-NEXT: } else {
// CHECK-NEXT: func.call @update_nest0_some_shared(
// CHECK: func.func private @update_nest0_some_shared(%{{[^:]*}}: memref<16xf32>, %{{[^:]*}}: memref<16xf32>, %{{[^:]*}}: memref<16xf32>, %{{[^:]*}}: memref<16xf32>)
func.func @update(%w: memref<16xf32> {tg.param = "w"}, %m: memref<16xf32> {tg.state = "m"},
                  %w_new: memref<16xf32> {tg.param = "w"}, %m_new: memref<16xf32> {tg.state = "m"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %w[%i] : memref<16xf32>
    %s = memref.load %m[%i] : memref<16xf32>
    %u = arith.subf %v, %s : f32
    memref.store %u, %w_new[%i] : memref<16xf32>
    memref.store %v, %m_new[%i] : memref<16xf32>
  }
  return
}

// A parallel loop: its whole body (here straight-line code and a loop, as a
// matmul tile whose single-trip loops folded away leaves it) becomes one
// noalias function, then the parallel loop itself another, so OpenMP's
// translation never works on the step function.
// CHECK-LABEL: func.func private @par_nest0(%{{[^:]*}}: index, %{{[^:]*}}: memref<64xf32> {llvm.noalias}, %{{[^:]*}}: memref<64xf32> {llvm.noalias})
// CHECK: memref.load
// CHECK: scf.for
// CHECK-LABEL: func.func private @par_nest1(
// CHECK: scf.parallel
// CHECK: call @par_nest0
// CHECK-LABEL: func.func @par
// CHECK-NOT: scf.parallel
// CHECK: call @par_nest1
func.func @par(%a: memref<64xf32>, %b: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%p) = (%c0) to (%c4) step (%c1) {
    %base = arith.muli %p, %c16 : index
    %first = memref.load %a[%base] : memref<64xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      %j = arith.addi %base, %i : index
      %v = memref.load %a[%j] : memref<64xf32>
      %s = arith.addf %v, %first : f32
      memref.store %s, %b[%j] : memref<64xf32>
    }
    scf.reduce
  }
  return
}

// Identical nests (a model's identical layers) share one function, called
// from each place; the parallel loops around identical bodies merge once
// their bodies have. A nest that differs only in a constant stays apart.
// MERGE-LABEL: func.func private @layers_nest0(
// MERGE: arith.constant 2.000000e+00
// MERGE-NOT: func.func private @layers_nest1(
// MERGE-LABEL: func.func private @layers_nest2(
// MERGE: arith.constant 3.000000e+00
// MERGE-LABEL: func.func private @layers_nest3(
// MERGE: scf.for
// MERGE-NOT: func.func private @layers_nest4(
// MERGE-LABEL: func.func private @layers_nest5(
// MERGE: scf.parallel
// MERGE: call @layers_nest3
// MERGE-NOT: func.func private @layers_nest
// MERGE-LABEL: func.func @layers
// MERGE: call @layers_nest0(%arg0, %arg1)
// MERGE-NEXT: call @layers_nest0(%arg1, %arg2)
// MERGE-NEXT: call @layers_nest2(%arg1, %arg2)
// MERGE-NEXT: call @layers_nest5(%arg0, %arg1)
// MERGE-NEXT: call @layers_nest5(%arg1, %arg2)
// MERGE-NEXT: return
func.func @layers(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %a[%i] : memref<16xf32>
    %k = arith.constant 2.0 : f32
    %u = arith.mulf %v, %k : f32
    memref.store %u, %b[%i] : memref<16xf32>
  } {layer = 0}
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %b[%i] : memref<16xf32>
    %k = arith.constant 2.0 : f32
    %u = arith.mulf %v, %k : f32
    memref.store %u, %c[%i] : memref<16xf32>
  } {layer = 0}
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %b[%i] : memref<16xf32>
    %k = arith.constant 3.0 : f32
    %u = arith.mulf %v, %k : f32
    memref.store %u, %c[%i] : memref<16xf32>
  } {layer = 0}
  scf.parallel (%p) = (%c0) to (%c16) step (%c1) {
    scf.for %i = %c0 to %c1 step %c1 {
      %v = memref.load %a[%p] : memref<16xf32>
      memref.store %v, %b[%p] : memref<16xf32>
    }
    scf.reduce
  }
  scf.parallel (%p) = (%c0) to (%c16) step (%c1) {
    scf.for %i = %c0 to %c1 step %c1 {
      %v = memref.load %b[%p] : memref<16xf32>
      memref.store %v, %c[%p] : memref<16xf32>
    }
    scf.reduce
  }
  return
}
