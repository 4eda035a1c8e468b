//===- HostReads.h - device values the host program reads -------*- C++ -*-===//
//
// A host loop whose trip counts and views come from values in device
// memory (a mixture-of-experts layer's loop over experts reads each
// expert's row offsets) reads them from a host copy of their buffer, made
// before the loop: the host cannot dereference device memory.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_LIB_TARGET_CUDA_HOSTREADS_H
#define TGC_LIB_TARGET_CUDA_HOSTREADS_H

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace tgc::cuda {

/// Marks the host buffers (memref.alloca) that hold copies of device
/// buffers.
constexpr llvm::StringLiteral kHostCopyAttrName = "tgc.gpu.host_copy";

/// Whether `op` holds a parallel loop (a kernel, before mapping).
bool containsParallelLoop(mlir::Operation *op);

/// Whether `memref` is a host copy: the host may read it.
bool isHostCopy(mlir::Value memref);

/// Whether `op` only reads or fills a host copy (a load of one, or the
/// copy into one): host code, not a kernel.
bool isHostCopyAccess(mlir::Operation *op);

/// Makes every load that `loop`'s host program (its body outside parallel
/// loops) does read a host copy of its buffer, copied before the loop, and
/// returns true (a copy made before an earlier loop serves again when
/// nothing between could have changed the buffer); or changes nothing and
/// returns false when the loads are not control values (none sets the trip
/// count of a loop of kernels inside) or a buffer cannot be copied: defined in
/// the loop, of dynamic shape or a non-identity layout, larger than `maxBytes`,
/// or used in the loop other than by loads. The copy is a `gpu.memcpy` when
/// buffers live in device memory, a `memref.copy` otherwise (--gpu-emulate).
bool copyHostReads(mlir::scf::ForOp loop, bool deviceMemory, int64_t maxBytes);

} // namespace tgc::cuda

#endif // TGC_LIB_TARGET_CUDA_HOSTREADS_H
