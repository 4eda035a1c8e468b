// RUN: tgc-opt %s --split-input-file --tgc-gpu-tile-matmuls | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tgc-gpu-tile-matmuls --tgc-gpu-lower-block-programs | FileCheck %s --check-prefix=GPU
// RUN: not tgc-opt %s --split-input-file "--tgc-gpu-tile-matmuls=tile-m=40" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tgc-opt %s --split-input-file "--tgc-gpu-tile-matmuls=mma=emulated" | FileCheck %s --check-prefix=EMU
// RUN: tgc-opt %s --split-input-file "--tgc-gpu-tile-matmuls=mma=nvvm" --tgc-gpu-lower-block-programs | FileCheck %s --check-prefix=NVVM
// RUN: tgc-opt %s --split-input-file "--tgc-gpu-tile-matmuls=mma=nvvm tile-k=8" | FileCheck %s --check-prefix=SCALAR
// RUN: not tgc-opt %s --split-input-file "--tgc-gpu-tile-matmuls=mma=wmma" 2>&1 | FileCheck %s --check-prefix=BADMMA

// BAD: tiles must split evenly over the threads
// BADMMA: for the --mma option: Cannot find option named 'wmma'

// A 70 x 50 x 37 matmul (no size a multiple of a tile): a grid of 1 x 2 x 1
// blocks of 64 x 64 outputs; per K tile of 16, one phase copies the A and B
// tiles (zero outside the operands) and one accumulates; a first phase
// zeroes each thread's 4 x 4 accumulators and a last adds them to C.
// CHECK-LABEL: func.func @matmul
// CHECK: %[[C2:.+]] = arith.constant 2 : index
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%{{[a-z0-9_]+}}, %[[C2]], %{{[a-z0-9_]+}})
// CHECK: memref.alloca() {tgc.gpu.shared} : memref<16x64xf32>
// CHECK: memref.alloca() {tgc.gpu.shared} : memref<16x64xf32>
// CHECK: memref.alloca() {tgc.gpu.per_thread} : memref<256x4x4xf32>
// CHECK: scf.parallel
// CHECK: } {tgc.gpu.phase}
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: arith.cmpi ult, %{{.+}}, %c37
// CHECK: arith.cmpi ult, %{{.+}}, %c70
// CHECK: scf.if
// CHECK: memref.load %arg0
// CHECK: } {tgc.gpu.phase}
// CHECK: arith.mulf {{.*}} fastmath<contract>
// CHECK: } {tgc.gpu.phase}
// CHECK: }
// CHECK: memref.load %arg2
// CHECK: memref.store {{.*}}, %arg2
// CHECK: } {tgc.gpu.phase}
// CHECK: } {tgc.gpu.block_program}
// CHECK-NOT: linalg.matmul

// Every thread runs the block's phases, each followed by a barrier; the
// tiles are shared memory, the accumulators private.
// GPU-LABEL: func.func @matmul
// GPU: gpu.launch blocks({{.*}}) threads({{.*}}) in ({{[^)]*}} = %c256{{[^)]*}}) workgroup(%{{[a-z0-9]+}} : memref<16x64xf32, #gpu.address_space<workgroup>>, %{{[a-z0-9]+}} : memref<16x64xf32, #gpu.address_space<workgroup>>) private(%{{[a-z0-9]+}} : memref<4x4xf32, #gpu.address_space<private>>)
// GPU-COUNT-4: gpu.barrier
// GPU-NOT: gpu.barrier
// GPU: gpu.terminator
// GPU-NOT: tgc.gpu
func.func @matmul(%a: memref<70x37xf32>, %b: memref<37x50xf32>, %c: memref<70x50xf32>) {
  linalg.matmul ins(%a, %b : memref<70x37xf32>, memref<37x50xf32>) outs(%c : memref<70x50xf32>)
  return
}

// -----

// A batch dimension is the grid's z.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
// CHECK: scf.parallel ({{.*}}, {{.*}}, %[[BATCH:.+]]) = ({{.*}}) to (%{{.+}}, %{{.+}}, %[[C3]])
// CHECK: memref.load %arg0[%[[BATCH]],
// CHECK: memref.load %arg1[%[[BATCH]],
// CHECK: memref.load %arg2[%[[BATCH]],
func.func @batch_matmul(%a: memref<3x5x7xf32>, %b: memref<3x7x9xf32>, %c: memref<3x5x9xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<3x5x7xf32>, memref<3x7x9xf32>) outs(%c : memref<3x5x9xf32>)
  return
}

// -----

// Operands are read through their indexing maps: B transposed (n, k) is
// loaded as %arg1[n, k].
// CHECK-LABEL: func.func @transposed_rhs
// CHECK: memref.load %arg0[%{{.+}}, %{{.+}}] : memref<5x7xf32>
// CHECK: arith.remui %{{.+}}, %c64
// CHECK-NEXT: %[[N:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK-NEXT: %[[K:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK-NEXT: arith.cmpi ult, %[[K]], %c7
// CHECK-NEXT: arith.cmpi ult, %[[N]], %c9
// CHECK: memref.load %arg1[%[[N]], %[[K]]] : memref<9x7xf32>
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
func.func @transposed_rhs(%a: memref<5x7xf32>, %b: memref<9x7xf32>, %c: memref<5x9xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #out],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<5x7xf32>, memref<9x7xf32>) outs(%c : memref<5x9xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Mixed precision: bf16 (or f16) operands accumulated in f32. The shared
// tiles keep the operands' type (half the loads and the shared memory of
// f32 ones), zero-padded with a bf16 zero, and each product widens its two
// factors to f32.
// CHECK-LABEL: func.func @bf16_matmul
// CHECK: memref.alloca() {tgc.gpu.shared} : memref<16x64xbf16>
// CHECK: memref.alloca() {tgc.gpu.shared} : memref<16x64xbf16>
// CHECK: memref.alloca() {tgc.gpu.per_thread} : memref<256x4x4xf32>
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : bf16
// CHECK: scf.if %{{.+}} -> (bf16)
// CHECK: memref.load %arg0{{.*}} : memref<70x37xbf16>
// CHECK: scf.yield %[[ZERO]] : bf16
// CHECK: } {tgc.gpu.phase}
// CHECK: %[[A:.+]] = memref.load %{{.+}} : memref<16x64xbf16>
// CHECK: %[[AW:.+]] = arith.extf %[[A]] : bf16 to f32
// CHECK: %[[B:.+]] = memref.load %{{.+}} : memref<16x64xbf16>
// CHECK: %[[BW:.+]] = arith.extf %[[B]] : bf16 to f32
// CHECK: arith.mulf %[[AW]], %[[BW]] fastmath<contract> : f32
// CHECK-NOT: linalg.matmul
// GPU-LABEL: func.func @bf16_matmul
// GPU: workgroup(%{{[a-z0-9]+}} : memref<16x64xbf16, #gpu.address_space<workgroup>>, %{{[a-z0-9]+}} : memref<16x64xbf16, #gpu.address_space<workgroup>>) private(%{{[a-z0-9]+}} : memref<4x4xf32, #gpu.address_space<private>>)

// Tensor cores: 8 warps, each a 16-row slice and 4 subtiles of 8 columns
// of the 64 x 64 tile; per thread 4 x 4 f32 accumulators (the C
// fragments), 8 A and 4 x 4 B fragment elements. Emulated, the fragment
// loads and the multiply are phases of their own; the multiply gathers
// the warp's fragments over 16 k.
// EMU-LABEL: func.func @bf16_matmul
// EMU: memref.alloca() {tgc.gpu.per_thread} : memref<256x4x4xf32>
// EMU: %[[FA:.+]] = memref.alloca() {tgc.gpu.per_thread} : memref<256x8xbf16>
// EMU: %[[FB:.+]] = memref.alloca() {tgc.gpu.per_thread} : memref<256x4x4xbf16>
// EMU: } {tgc.gpu.phase}
// EMU: scf.for
// EMU: } {tgc.gpu.phase}
// EMU: memref.store %{{.+}}, %[[FA]]
// EMU: memref.store %{{.+}}, %[[FB]]
// EMU: } {tgc.gpu.phase}
// EMU: scf.for %{{.+}} = %c0{{.*}} to %c16 step %c1{{.*}} iter_args
// EMU: memref.load %[[FA]]
// EMU: memref.load %[[FB]]
// EMU: arith.extf
// EMU: } {tgc.gpu.phase}
// EMU-NOT: nvvm.mma.sync
// EMU: memref.store {{.*}}, %arg2
// EMU: } {tgc.gpu.phase}
// On the GPU the loads and nvvm.mma.sync share a phase: two bf16 to an
// i32, the lower element in the low half.
// NVVM-LABEL: func.func @bf16_matmul
// NVVM: private(%{{[a-z0-9]+}} : memref<4x4xf32, #gpu.address_space<private>>, %{{[a-z0-9]+}} : memref<8xbf16, #gpu.address_space<private>>, %{{[a-z0-9]+}} : memref<4x4xbf16, #gpu.address_space<private>>)
// NVVM: arith.bitcast %{{.+}} : bf16 to i16
// NVVM: arith.shli
// NVVM-COUNT-4: nvvm.mma.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// NVVM-NOT: nvvm.mma.sync
// NVVM: gpu.barrier
// NVVM: memref.store {{.*}}, %arg2
// A K tile of 8 does not fill mma.m16n8k16's K: scalar multiply-adds.
// SCALAR-LABEL: func.func @bf16_matmul
// SCALAR-NOT: nvvm.mma.sync
// SCALAR: arith.mulf {{.*}} fastmath<contract> : f32
// SCALAR-NOT: nvvm.mma.sync
func.func @bf16_matmul(%a: memref<70x37xbf16>, %b: memref<37x50xbf16>, %c: memref<70x50xf32>) {
  linalg.matmul ins(%a, %b : memref<70x37xbf16>, memref<37x50xbf16>) outs(%c : memref<70x50xf32>)
  return
}

// -----

// f16 operands go in as vector<2xf16>; f32 ones keep scalar multiply-adds
// (tf32 would need its own tolerance).
// NVVM-LABEL: func.func @f16_and_f32
// NVVM: nvvm.mma.sync {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// NVVM: gpu.launch
// NVVM-NOT: nvvm.mma.sync
// NVVM: arith.mulf {{.*}} fastmath<contract> : f32
func.func @f16_and_f32(%a: memref<1x16xf16>, %b: memref<16x61xf16>, %c: memref<1x61xf32>,
                       %x: memref<5x3xf32>, %y: memref<3x7xf32>, %z: memref<5x7xf32>) {
  linalg.matmul ins(%a, %b : memref<1x16xf16>, memref<16x61xf16>) outs(%c : memref<1x61xf32>)
  linalg.matmul ins(%x, %y : memref<5x3xf32>, memref<3x7xf32>) outs(%z : memref<5x7xf32>)
  return
}

// -----

// Operands of two types, or a low-precision output, are left to the
// per-element kernels.
// CHECK-LABEL: func.func @mixed_operands
// CHECK: linalg.matmul
// CHECK-NOT: tgc.gpu
// CHECK: linalg.matmul
// CHECK-NOT: tgc.gpu
func.func @mixed_operands(%a: memref<8x16xbf16>, %b: memref<16x8xf32>, %c: memref<8x8xf32>, %d: memref<16x8xbf16>, %e: memref<8x8xbf16>) {
  linalg.matmul ins(%a, %b : memref<8x16xbf16>, memref<16x8xf32>) outs(%c : memref<8x8xf32>)
  linalg.matmul ins(%a, %d : memref<8x16xbf16>, memref<16x8xbf16>) outs(%e : memref<8x8xbf16>)
  return
}

// -----

// Anything else is left to the per-element kernels.
// CHECK-LABEL: func.func @not_a_contraction
// CHECK: linalg.generic
// CHECK-NOT: tgc.gpu
#id = affine_map<(i, j) -> (i, j)>
func.func @not_a_contraction(%a: memref<5x7xf32>, %c: memref<5x7xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<5x7xf32>) outs(%c : memref<5x7xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}
