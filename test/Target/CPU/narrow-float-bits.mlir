// RUN: tgc-opt %s --tgc-narrow-float-bits | FileCheck %s

// bf16 bits computed as i16 (tgc-expand-math's rounding) are stored as
// i16, and a bf16 load read only as bits loads i16: LLVM's x86 backend
// scalarises the <16 x bfloat> forms without AVX512-BF16.
// CHECK-LABEL: llvm.func @round_and_store
// CHECK-NOT: llvm.bitcast
// CHECK: llvm.store %arg1, %arg0 {alignment = 2 : i64} : i16, !llvm.ptr
// CHECK: llvm.store %arg2, %arg0 : vector<16xi16>, !llvm.ptr
llvm.func @round_and_store(%p: !llvm.ptr, %bits: i16, %lanes: vector<16xi16>) {
  %b = llvm.bitcast %bits : i16 to bf16
  llvm.store %b, %p {alignment = 2 : i64} : bf16, !llvm.ptr
  %v = llvm.bitcast %lanes : vector<16xi16> to vector<16xbf16>
  llvm.store %v, %p : vector<16xbf16>, !llvm.ptr
  llvm.return
}

// CHECK-LABEL: llvm.func @load_bits
// CHECK: %[[L:.*]] = llvm.load %arg0 : !llvm.ptr -> i16
// CHECK-NOT: llvm.bitcast
// CHECK: llvm.zext %[[L]] : i16 to i32
// CHECK: %[[H:.*]] = llvm.load %arg0 : !llvm.ptr -> f16
// CHECK: llvm.fpext %[[H]]
llvm.func @load_bits(%p: !llvm.ptr) -> i32 {
  %b = llvm.load %p : !llvm.ptr -> bf16
  %bits = llvm.bitcast %b : bf16 to i16
  %wide = llvm.zext %bits : i16 to i32
  // Read as a float too: stays.
  %h = llvm.load %p : !llvm.ptr -> f16
  %f = llvm.fpext %h : f16 to f32
  %i = llvm.bitcast %f : f32 to i32
  %sum = llvm.add %wide, %i : i32
  llvm.return %sum : i32
}
