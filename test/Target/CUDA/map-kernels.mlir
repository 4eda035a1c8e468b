// RUN: tgc-opt %s --pass-pipeline='builtin.module(func.func(tgc-gpu-map-kernels{threads-per-block=64}))' --split-input-file | FileCheck %s
// RUN: not tgc-opt %s --pass-pipeline='builtin.module(func.func(tgc-gpu-map-kernels{threads-per-block=2048}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tgc-opt %s --pass-pipeline='builtin.module(func.func(tgc-gpu-map-kernels{threads-per-block=64 device-memory=false}))' --split-input-file | FileCheck %s --check-prefix=EMU

// BAD: threads-per-block must be in 1..1024, got 2048

// 3 x 37 = 111 iterations: two blocks of 64 threads, the last guarded; the
// innermost dimension (37) varies fastest across threads.
// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C111:.+]] = arith.constant 111 : index
// CHECK-DAG: %[[C37:.+]] = arith.constant 37 : index
// CHECK: scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%[[C2]])
// CHECK: scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%[[C64]])
// CHECK: %[[BASE:.+]] = arith.muli %[[BLOCK]], %[[C64]]
// CHECK: %[[LINEAR:.+]] = arith.addi %[[BASE]], %[[THREAD]]
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[LINEAR]], %[[C111]]
// CHECK: scf.if %[[IN]]
// CHECK: %[[J:.+]] = arith.remui %[[LINEAR]], %[[C37]]
// CHECK: %[[I:.+]] = arith.divui %[[LINEAR]], %[[C37]]
// CHECK: memref.load %{{.+}}[%[[I]], %[[J]]]
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x
func.func @elementwise(%a: memref<3x37xf32>, %b: memref<3x37xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c37 = arith.constant 37 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c3, %c37) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<3x37xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %b[%i, %j] : memref<3x37xf32>
    scf.reduce
  }
  return
}

// -----

// Host-level work on buffers (a 0-d fill, a sum to a scalar) becomes one
// single-thread kernel; no guard when the threads fit exactly.
// CHECK-LABEL: func.func @scalar_sum
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.+}}, %arg1[]
// CHECK: scf.for
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NEXT: return
func.func @scalar_sum(%a: memref<5xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %out[] : memref<f32>
  scf.for %i = %c0 to %c5 step %c1 {
    %x = memref.load %a[%i] : memref<5xf32>
    %acc = memref.load %out[] : memref<f32>
    %s = arith.addf %x, %acc : f32
    memref.store %s, %out[] : memref<f32>
  }
  return
}

// -----

// A loop over chunks stays on the host and launches its kernels. A loop
// whose views depend on loaded values, here through a rank-reducing view
// the column interchange does not reason about, runs whole in one thread,
// its scratch buffer allocated once before it, and its inner parallel loop
// a sequential loop.
// CHECK-LABEL: func.func @chunks_and_scatter
// CHECK: scf.for %[[CHUNK:.+]] =
// CHECK: memref.subview %arg0[%[[CHUNK]], 0]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK: }
// CHECK: %[[SCRATCH:.+]] = memref.alloc() : memref<4xf32>
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: memref.load %arg2
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: memref.subview
// CHECK-NEXT: scf.for
// CHECK: memref.store %{{.+}}, %[[SCRATCH]]
// CHECK-NOT: processor = sequential
func.func @chunks_and_scatter(%a: memref<8x4xf32>, %b: memref<8x4xf32>, %ids: memref<3xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %chunk = %c0 to %c8 step %c2 {
    %rows = memref.subview %a[%chunk, 0] [2, 4] [1, 1] : memref<8x4xf32> to memref<2x4xf32, strided<[4, 1], offset: ?>>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c4) step (%c1, %c1) {
      %x = memref.load %rows[%i, %j] : memref<2x4xf32, strided<[4, 1], offset: ?>>
      %y = arith.mulf %x, %x : f32
      memref.store %y, %rows[%i, %j] : memref<2x4xf32, strided<[4, 1], offset: ?>>
      scf.reduce
    }
  }
  scf.for %t = %c0 to %c3 step %c1 {
    %id = memref.load %ids[%t] : memref<3xi32>
    %row = arith.index_cast %id : i32 to index
    %dst = memref.subview %b[%row, 0] [1, 4] [1, 1] : memref<8x4xf32> to memref<4xf32, strided<[1], offset: ?>>
    %scratch = memref.alloc() : memref<4xf32>
    scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
      %x = memref.load %dst[%j] : memref<4xf32, strided<[1], offset: ?>>
      %y = arith.addf %x, %x : f32
      memref.store %y, %scratch[%j] : memref<4xf32>
      scf.reduce
    }
  }
  return
}

// -----

// Constant tables are read through a get_global inside each kernel (kernel
// outlining then copies the global into the GPU module).
// CHECK-LABEL: func.func @constant_table
// CHECK-NOT: memref.get_global
// CHECK: scf.parallel
// CHECK-NEXT: memref.get_global @table
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @constant_table(%b: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = memref.get_global @table : memref<4xf32>
  scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
    %x = memref.load %t[%j] : memref<4xf32>
    memref.store %x, %b[%j] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// The embedding gradient's scatter: dW[id[t], :] += dX[t, :] through a
// scratch row. Every access is indexed by the column in its last dimension,
// of buffers whose last dimension the loop does not move: it becomes one
// thread per column walking the tokens in order (deterministic, no atomics).
// CHECK-LABEL: func.func @scatter_rows
// CHECK: %[[SCRATCH:.+]] = memref.alloc() : memref<1x6xf32>
// CHECK: scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%c1{{.*}})
// CHECK: scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%c6{{.*}})
// CHECK: %[[COL:.+]] = arith.remui %{{.+}}, %c6
// CHECK: %[[UNIT:.+]] = arith.divui %{{.+}}, %c6
// CHECK: scf.for %[[T:.+]] =
// CHECK: memref.load %arg2[%[[T]]]
// CHECK: %[[ROW:.+]] = memref.subview %arg0
// CHECK: memref.load %[[ROW]][%[[UNIT]], %[[COL]]]
// CHECK: memref.store %{{.+}}, %[[SCRATCH]][%[[UNIT]], %[[COL]]]
// CHECK: memref.load %[[SCRATCH]][%[[UNIT]], %[[COL]]]
// CHECK: memref.store %{{.+}}, %[[ROW]][%[[UNIT]], %[[COL]]]
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_x
func.func @scatter_rows(%dw: memref<8x6xf32>, %dx: memref<3x6xf32>, %ids: memref<3xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  scf.for %t = %c0 to %c3 step %c1 {
    %id = memref.load %ids[%t] : memref<3xi32>
    %row = arith.index_cast %id : i32 to index
    %dst = memref.subview %dw[%row, 0] [1, 6] [1, 1] : memref<8x6xf32> to memref<1x6xf32, strided<[6, 1], offset: ?>>
    %src = memref.subview %dx[%t, 0] [1, 6] [1, 1] : memref<3x6xf32> to memref<1x6xf32, strided<[6, 1], offset: ?>>
    %scratch = memref.alloc() : memref<1x6xf32>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c1, %c6) step (%c1, %c1) {
      %x = memref.load %dst[%i, %j] : memref<1x6xf32, strided<[6, 1], offset: ?>>
      %y = memref.load %src[%i, %j] : memref<1x6xf32, strided<[6, 1], offset: ?>>
      %s = arith.addf %x, %y : f32
      memref.store %s, %scratch[%i, %j] : memref<1x6xf32>
      scf.reduce
    }
    scf.parallel (%i, %j) = (%c0, %c0) to (%c1, %c6) step (%c1, %c1) {
      %x = memref.load %scratch[%i, %j] : memref<1x6xf32>
      memref.store %x, %dst[%i, %j] : memref<1x6xf32, strided<[6, 1], offset: ?>>
      scf.reduce
    }
  }
  return
}

// -----

// Not interchanged: every column adds into the same element (its store is
// not indexed by the column), so one thread runs the loop whole.
// CHECK-LABEL: func.func @scatter_into_one
// CHECK: scf.parallel
// CHECK-NEXT: scf.parallel (%{{.+}}) = (%{{.+}}) to (%c1{{.*}})
// CHECK: scf.for
// CHECK: scf.for
func.func @scatter_into_one(%dw: memref<8x6xf32>, %dx: memref<3x6xf32>, %ids: memref<3xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  scf.for %t = %c0 to %c3 step %c1 {
    %id = memref.load %ids[%t] : memref<3xi32>
    %row = arith.index_cast %id : i32 to index
    scf.parallel (%j) = (%c0) to (%c6) step (%c1) {
      %x = memref.load %dx[%t, %j] : memref<3x6xf32>
      %acc = memref.load %dw[%row, %c0] : memref<8x6xf32>
      %s = arith.addf %acc, %x : f32
      memref.store %s, %dw[%row, %c0] : memref<8x6xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A decode step's KV-cache row: one token's scatter, its loop folded away,
// so the view at the loaded position is host-level code. The kernel that
// writes the row computes the load and the view itself; nothing of it is
// left on the host.
// CHECK-LABEL: func.func @cache_row
// CHECK-NEXT: arith.constant
// CHECK-NOT: memref.load
// CHECK: scf.parallel (%{{.+}}) = (%{{.+}}) to (%c1{{.*}})
// CHECK: scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%c64{{.*}})
// CHECK: %[[POS:.+]] = memref.load %arg2[%c0{{.*}}, %c0{{.*}}]
// CHECK: %[[AT:.+]] = arith.index_cast %[[POS]]
// CHECK: %[[ROW:.+]] = memref.subview %arg0[%[[AT]], 0] [1, 64]
// CHECK: memref.store %{{.+}}, %[[ROW]]
func.func @cache_row(%cache: memref<16x64xf32>, %new: memref<1x64xf32>, %positions: memref<1x1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pos = memref.load %positions[%c0, %c0] : memref<1x1xi32>
  %at = arith.index_cast %pos : i32 to index
  %row = memref.subview %cache[%at, 0] [1, 64] [1, 1] : memref<16x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c1, %c64) step (%c1, %c1) {
    %x = memref.load %new[%i, %j] : memref<1x64xf32>
    memref.store %x, %row[%i, %j] : memref<1x64xf32, strided<[64, 1], offset: ?>>
    scf.reduce
  }
  return
}

// -----

// A loop over experts: the offsets it loads count each expert's chunks, so
// it stays a host loop over a host copy of them, copied before it (from
// device memory, or within host memory with device-memory=false); the
// kernel over a padded chunk's rows (at most 64, known at run time) is
// mapped at 64 x 4 and guarded by the run-time count.
// CHECK-LABEL: func.func @experts
// CHECK: %[[HOST:.+]] = memref.alloca() {tgc.gpu.host_copy} : memref<3xi32>
// CHECK: gpu.memcpy %[[HOST]], %arg0 : memref<3xi32>, memref<3xi32>
// CHECK-NEXT: scf.for %[[E:.+]] =
// CHECK: memref.load %[[HOST]][%[[E]]]
// CHECK: scf.for
// CHECK: %[[ROWS:.+]] = arith.minui
// CHECK: scf.parallel (%{{.+}}) = (%{{.+}}) to (%c4{{.*}})
// CHECK: scf.parallel (%{{.+}}) = (%{{.+}}) to (%c64{{.*}})
// CHECK-NOT: arith.cmpi ult
// CHECK: %[[COL:.+]] = arith.remui %{{.+}}, %c4
// CHECK: %[[ROW:.+]] = arith.divui %{{.+}}, %c4
// CHECK: %[[WITHIN:.+]] = arith.cmpi slt, %[[ROW]], %[[ROWS]]
// CHECK: scf.if %[[WITHIN]]
// CHECK: memref.load %{{.+}}[%[[ROW]], %[[COL]]]
// EMU-LABEL: func.func @experts
// EMU: %[[HOST:.+]] = memref.alloca() {tgc.gpu.host_copy} : memref<3xi32>
// EMU-NOT: gpu.memcpy
// EMU: memref.copy %arg0, %[[HOST]] : memref<3xi32> to memref<3xi32>
// EMU-NEXT: scf.for
func.func @experts(%offsets: memref<3xi32>, %x: memref<600x4xf32>, %y: memref<600x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  scf.for %e = %c0 to %c2 step %c1 {
    %next = arith.addi %e, %c1 : index
    %lo32 = memref.load %offsets[%e] : memref<3xi32>
    %hi32 = memref.load %offsets[%next] : memref<3xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %n = arith.subi %hi, %lo : index
    %chunks = arith.ceildivui %n, %c64 : index
    scf.for %c = %c0 to %chunks step %c1 {
      %off = arith.muli %c, %c64 : index
      %first = arith.addi %lo, %off : index
      %left = arith.subi %hi, %first : index
      %rows = arith.minui %left, %c64 : index
      %src = memref.subview %x[%first, 0] [%rows, 4] [1, 1] : memref<600x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
      %dst = memref.subview %y[%first, 0] [%rows, 4] [1, 1] : memref<600x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
      scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %c4) step (%c1, %c1) {
        %v = memref.load %src[%i, %j] : memref<?x4xf32, strided<[4, 1], offset: ?>>
        memref.store %v, %dst[%i, %j] : memref<?x4xf32, strided<[4, 1], offset: ?>>
        scf.reduce
      }
    }
  }
  return
}

// -----

// The same loop when a kernel in it also writes the offsets: no copy made
// before the loop would hold, so the loop runs whole in one thread.
// CHECK-LABEL: func.func @offsets_written
// CHECK-NOT: tgc.gpu.host_copy
// CHECK: scf.parallel (%{{.+}}) = (%{{.+}}) to (%c1{{.*}})
// CHECK: scf.parallel (%{{.+}}) = (%{{.+}}) to (%c1{{.*}})
// CHECK: scf.for
func.func @offsets_written(%offsets: memref<3xi32>, %x: memref<600x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  scf.for %e = %c0 to %c2 step %c1 {
    %n32 = memref.load %offsets[%e] : memref<3xi32>
    %n = arith.index_cast %n32 : i32 to index
    scf.for %c = %c0 to %n step %c1 {
      scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
        memref.store %zero, %offsets[%e] : memref<3xi32>
        scf.reduce
      }
    }
  }
  return
}

// -----

// Run on the host, a block program of one block in a loop keeps its shared
// and per-thread buffers at the function's entry: canonicalised into the
// loop's body, they would grow the stack each iteration. On the device
// they stay (the launch's shared and private memory).
// CHECK-LABEL: func.func @one_block_in_loop
// CHECK: scf.for
// CHECK: scf.parallel
// CHECK-NEXT: memref.alloca() {tgc.gpu.shared}
// EMU-LABEL: func.func @one_block_in_loop
// EMU-NEXT: memref.alloca() {tgc.gpu.per_thread} : memref<2x4xf32>
// EMU-NEXT: memref.alloca() {tgc.gpu.shared} : memref<8xf32>
// EMU: scf.for
func.func @one_block_in_loop(%out: memref<3x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  scf.for %r = %c0 to %c3 step %c1 {
    scf.parallel (%bx, %by, %bz) = (%c0, %c0, %c0) to (%c1, %c1, %c1) step (%c1, %c1, %c1) {
      %tile = memref.alloca() {tgc.gpu.shared} : memref<8xf32>
      %acc = memref.alloca() {tgc.gpu.per_thread} : memref<2x4xf32>
      scf.parallel (%t) = (%c0) to (%c2) step (%c1) {
        memref.store %zero, %acc[%t, %c0] : memref<2x4xf32>
        memref.store %zero, %tile[%t] : memref<8xf32>
        scf.reduce
      } {tgc.gpu.phase}
      scf.parallel (%t) = (%c0) to (%c2) step (%c1) {
        %v = memref.load %tile[%t] : memref<8xf32>
        memref.store %v, %out[%r, %t] : memref<3x8xf32>
        scf.reduce
      } {tgc.gpu.phase}
      scf.reduce
    } {tgc.gpu.block_program}
  }
  return
}

// -----

// Two loops over experts reading the same offsets share one host copy;
// after a kernel that writes the offsets, the next loop copies them again.
// CHECK-LABEL: func.func @shared_offsets
// CHECK: %[[SECOND:.+]] = memref.alloca() {tgc.gpu.host_copy} : memref<3xi32>
// CHECK: %[[FIRST:.+]] = memref.alloca() {tgc.gpu.host_copy} : memref<3xi32>
// CHECK-NOT: memref.alloca
// CHECK: gpu.memcpy %[[FIRST]], %arg0
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[FIRST]]
// CHECK-NOT: gpu.memcpy
// CHECK: scf.for
// CHECK: memref.load %[[FIRST]]
// CHECK: memref.store
// CHECK: gpu.memcpy %[[SECOND]], %arg0
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[SECOND]]
func.func @shared_offsets(%offsets: memref<3xi32>, %x: memref<600x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  scf.for %e = %c0 to %c2 step %c1 {
    %n32 = memref.load %offsets[%e] : memref<3xi32>
    %n = arith.index_cast %n32 : i32 to index
    scf.for %r = %c0 to %n step %c1 {
      scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
        memref.store %one, %x[%r, %j] : memref<600x4xf32>
        scf.reduce
      }
    }
  }
  scf.for %e = %c0 to %c2 step %c1 {
    %n32 = memref.load %offsets[%e] : memref<3xi32>
    %n = arith.index_cast %n32 : i32 to index
    scf.for %r = %c0 to %n step %c1 {
      scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
        memref.store %one, %x[%r, %j] : memref<600x4xf32>
        scf.reduce
      }
    }
  }
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    memref.store %zero, %offsets[%i] : memref<3xi32>
    scf.reduce
  }
  scf.for %e = %c0 to %c2 step %c1 {
    %n32 = memref.load %offsets[%e] : memref<3xi32>
    %n = arith.index_cast %n32 : i32 to index
    scf.for %r = %c0 to %n step %c1 {
      scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
        memref.store %one, %x[%r, %j] : memref<600x4xf32>
        scf.reduce
      }
    }
  }
  return
}
