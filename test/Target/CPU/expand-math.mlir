// tgc-expand-math: f32 <-> bf16 conversions and bf16 selects become integer
// arithmetic, so LLVM needs no __truncsfbf2 (missing from Debian's libgcc)
// on a CPU without AVX512-BF16; exp becomes a polynomial.
// RUN: tgc-opt %s --tgc-expand-math | FileCheck %s

// CHECK-LABEL: func.func @bf16
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK: arith.shrui
// CHECK: arith.select {{.*}} : vector<8xi1>, vector<8xi16>
// CHECK-NOT: math.exp
func.func @bf16(%x: vector<8xf32>, %c: vector<8xi1>) -> (vector<8xbf16>, vector<8xf32>, vector<8xf32>) {
  %t = arith.truncf %x : vector<8xf32> to vector<8xbf16>
  %nan = arith.constant dense<0x7FC0> : vector<8xbf16>
  %s = arith.select %c, %nan, %t : vector<8xi1>, vector<8xbf16>
  %w = arith.extf %s : vector<8xbf16> to vector<8xf32>
  %e = math.exp %x : vector<8xf32>
  return %s, %w, %e : vector<8xbf16>, vector<8xf32>, vector<8xf32>
}
