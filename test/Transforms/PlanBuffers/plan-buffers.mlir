// The static arena plan on a hand-checkable function. Live ranges (top-level
// positions) and sizes rounded up to 64 B:
//   %a [0,4] 448 B (its subview is read at 4)   %b [2,6] 64 B
//   %c [5,8] 832 B                              %d [7,9] 448 B
// Largest first: %c at 0; %a at 0 (dead before %c is born); %d overlaps %c
// so it goes to 832; %b overlaps %a and %c: 832 too (dead before %d).
// Arena: 832 + 448 = 1280 bytes.
// RUN: tgc-opt %s --tgc-plan-buffers | FileCheck %s
// RUN: tgc-opt %s --tgc-plan-buffers --tgc-lower-arena-allocs | FileCheck %s --check-prefix=LOWER

// CHECK: module attributes {tgc.arena_bytes = 1280 : i64}
// CHECK-LABEL: func.func @step
// CHECK-SAME: tgc.arena_bytes = 1280 : i64
// CHECK: %[[A:.*]] = memref.alloc() {tgc.arena_offset = 0 : i64} : memref<100xf32>
// CHECK: %[[B:.*]] = memref.alloc() {tgc.arena_offset = 832 : i64} : memref<16xf32>
// CHECK: %[[C:.*]] = memref.alloc() {tgc.arena_offset = 0 : i64} : memref<200xf32>
// CHECK: %[[D:.*]] = memref.alloc() {tgc.arena_offset = 832 : i64} : memref<100xf32>
// In a top-level loop's body, dead by the end of the iteration: planned
// (after the loop's position, when everything above is dead).
// CHECK: scf.for
// CHECK-NEXT: memref.alloc() {tgc.arena_offset = 0 : i64} : memref<4xf32>
// A buffer used inside a loop lives until the loop ends: the loop's own
// buffers do not share its bytes.
// CHECK-LABEL: func.func @chunks
// CHECK-SAME: tgc.arena_bytes = 512 : i64
// CHECK: memref.alloc() {tgc.arena_offset = 0 : i64} : memref<64xf32>
// CHECK: scf.for
// CHECK-NEXT: memref.alloc() {tgc.arena_offset = 256 : i64} : memref<64xf32>
// Nested loops (attention's query tiles around key tiles): the inner body's
// buffers are planned too; a buffer of the outer body read inside the
// inner loop lives until that loop ends, so the inner buffer does not share
// its bytes, while a buffer allocated after the inner loop may take the
// inner one's place.
// CHECK-LABEL: func.func @nested
// CHECK-SAME: tgc.arena_bytes = 512 : i64
// CHECK: scf.for
// CHECK-NEXT: memref.alloc() {tgc.arena_offset = 0 : i64} : memref<64xf32>
// CHECK: scf.for
// CHECK-NEXT: memref.alloc() {tgc.arena_offset = 256 : i64} : memref<64xf32>
// CHECK: memref.alloc() {tgc.arena_offset = 256 : i64} : memref<64xf32>
// Yielded to the next iteration: escapes, stays on the heap.
// CHECK-LABEL: func.func @carried
// CHECK: memref.alloc() : memref<4xf32>
// Returned: escapes, stays on the heap.
// CHECK-LABEL: func.func @escapes
// CHECK: memref.alloc() : memref<8xf32>

// LOWER: llvm.func @tgc_arena_alloc(i64) -> (!llvm.ptr {llvm.noalias})
// LOWER-SAME: inaccessibleMem = readwrite
// LOWER: llvm.func @tgc_arena_release(!llvm.ptr)
// LOWER-SAME: argMem = readwrite
// LOWER: llvm.mlir.global external constant @tgc_arena_bytes(1280 : i64)
// LOWER-LABEL: func.func @step
// LOWER: %[[OFF:.*]] = llvm.mlir.constant(832 : i64) : i64
// LOWER: llvm.call @tgc_arena_alloc(%[[OFF]]) : (i64) -> !llvm.ptr
// LOWER: llvm.call @tgc_arena_release
// LOWER-LABEL: func.func @escapes
// LOWER: memref.alloc() : memref<8xf32>

func.func @step(%in: memref<100xf32>, %out: memref<100xf32>) {
  %a = memref.alloc() : memref<100xf32>
  memref.copy %in, %a : memref<100xf32> to memref<100xf32>
  %b = memref.alloc() : memref<16xf32>
  %sa = memref.subview %a[0] [16] [1] : memref<100xf32> to memref<16xf32, strided<[1]>>
  memref.copy %sa, %b : memref<16xf32, strided<[1]>> to memref<16xf32>
  %c = memref.alloc() : memref<200xf32>
  %sc = memref.subview %c[0] [16] [1] : memref<200xf32> to memref<16xf32, strided<[1]>>
  memref.copy %b, %sc : memref<16xf32> to memref<16xf32, strided<[1]>>
  %d = memref.alloc() : memref<100xf32>
  %sc2 = memref.subview %c[0] [100] [1] : memref<200xf32> to memref<100xf32, strided<[1]>>
  memref.copy %sc2, %d : memref<100xf32, strided<[1]>> to memref<100xf32>
  memref.copy %d, %out : memref<100xf32> to memref<100xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %e = memref.alloc() : memref<4xf32>
    memref.dealloc %e : memref<4xf32>
  }
  return
}

func.func @chunks(%in: memref<64xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %big = memref.alloc() : memref<64xf32>
  memref.copy %in, %big : memref<64xf32> to memref<64xf32>
  scf.for %i = %c0 to %c2 step %c1 {
    %t = memref.alloc() : memref<64xf32>
    memref.copy %big, %t : memref<64xf32> to memref<64xf32>
    memref.copy %t, %out : memref<64xf32> to memref<64xf32>
    memref.dealloc %t : memref<64xf32>
  }
  return
}

func.func @nested(%in: memref<64xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %q = memref.alloc() : memref<64xf32>
    memref.copy %in, %q : memref<64xf32> to memref<64xf32>
    scf.for %j = %c0 to %i step %c1 {
      %s = memref.alloc() : memref<64xf32>
      memref.copy %q, %s : memref<64xf32> to memref<64xf32>
      memref.copy %s, %out : memref<64xf32> to memref<64xf32>
      memref.dealloc %s : memref<64xf32>
    }
    %o = memref.alloc() : memref<64xf32>
    memref.copy %q, %o : memref<64xf32> to memref<64xf32>
    memref.copy %o, %out : memref<64xf32> to memref<64xf32>
    memref.dealloc %o : memref<64xf32>
    memref.dealloc %q : memref<64xf32>
  }
  return
}

func.func @carried(%in: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %in) -> (memref<4xf32>) {
    %n = memref.alloc() : memref<4xf32>
    memref.copy %acc, %n : memref<4xf32> to memref<4xf32>
    scf.yield %n : memref<4xf32>
  }
  return
}

func.func @escapes() -> memref<8xf32> {
  %r = memref.alloc() : memref<8xf32>
  return %r : memref<8xf32>
}
