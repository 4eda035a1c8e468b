// Output tiles balanced for the threads that will run them: 256 rows of
// 6-row register tiles make 11 tiles of 24 rows (the last 16), which a
// static schedule splits 144 : 112 rows between 2 threads; balanced for 2
// (or 4) threads, 4 tiles of 66 rows (the last 58), for 8 threads 8 of 36.
// RUN: tgc-opt %s --tgc-vectorize-matmuls="vector-bits=512 vector-registers=32 l1-cache-bytes=49152 l2-cache-bytes=2097152" | FileCheck %s --check-prefix=MODEL
// RUN: tgc-opt %s --tgc-vectorize-matmuls="vector-bits=512 vector-registers=32 l1-cache-bytes=49152 l2-cache-bytes=2097152 threads=2" | FileCheck %s --check-prefix=TWO
// RUN: tgc-opt %s --tgc-vectorize-matmuls="vector-bits=512 vector-registers=32 l1-cache-bytes=49152 l2-cache-bytes=2097152 threads=8" | FileCheck %s --check-prefix=EIGHT
// MODEL: scf.forall ({{.*}}) in (11)
// TWO: scf.forall ({{.*}}) in (4)
// EIGHT: scf.forall ({{.*}}) in (8)
func.func @dw(%a: memref<256x1024xf32>, %b: memref<1024x256xf32>, %c: memref<256x256xf32>) {
  linalg.matmul ins(%a, %b : memref<256x1024xf32>, memref<1024x256xf32>) outs(%c : memref<256x256xf32>)
  return
}

// Batches already share evenly: 32 heads' products on 2 threads keep the
// model's tiles.
// MODEL-LABEL: func.func @heads
// MODEL: scf.forall ({{.*}}) in (32, 5)
// TWO-LABEL: func.func @heads
// TWO: scf.forall ({{.*}}) in (32, 5)
func.func @heads(%a: memref<32x128x64xf32>, %b: memref<32x64x128xf32>, %c: memref<32x128x128xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<32x128x64xf32>, memref<32x64x128xf32>) outs(%c : memref<32x128x128xf32>)
  return
}
