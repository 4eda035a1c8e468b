//===- CPUTarget.h - what the code generator knows of a CPU -----*- C++ -*-===//
//
// The CPU description the tile model and the schedule read: vector unit,
// caches, bf16 instructions and threads, from this machine or from LLVM's
// description of an --mcpu.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_CPU_CPUTARGET_H
#define TGC_TARGET_CPU_CPUTARGET_H

#include <cstdint>
#include <optional>
#include <string>

namespace tgc::cpu {

/// What the code generator needs to know of a CPU: its vector unit and
/// caches (the matmul tile model reads these).
struct CPUDescription {
  std::string name;               // LLVM CPU name
  unsigned vectorBits = 128;      // widest vector register in use
  unsigned vectorRegisters = 16;  // architectural vector registers
  int64_t l1CacheBytes = 32768;   // L1 data cache per core
  int64_t l2CacheBytes = 1 << 20; // L2 cache per core
  bool amx = false;               // AMX bf16 tiles (tdpbf16ps)
  bool avx512bf16 = false;        // AVX512-BF16 dot products (vdpbf16ps)
  int64_t threads = 0; // CPUs the step's threads run on (host only; 0: unknown)
};

/// With fusion, attention runs as parallel tasks per (sequence, key/value
/// head[, query tile]) whose score tile is at most this many bytes, and
/// each norm as tasks over tiles of rows of this many bytes: a task's tiles
/// (scores, Kᵀ and V tiles, running state; a norm's rows) stay in its
/// core's L2 (tgc-cpu-choose-tiles).
constexpr int64_t kTaskBytes = 64 << 10;

/// Without tasks, one batched tile of attention scores: small enough to
/// stay in the caches between its product, softmax and the next product,
/// big enough for efficient products and for a few tiles per sequence (so
/// that causal attention skips most tiles above the diagonal).
constexpr int64_t kAttentionTileBytes = 4 << 20;

/// An expert's rows (a run-time count) reach the matmul schedule in chunks
/// of this many rows, then zero-padded chunks of the tail size: static
/// shapes the schedule tiles well, fewer than 32 rows of padding each.
constexpr int64_t kExpertChunkRows = 256;
constexpr int64_t kExpertTailRows = 32;

/// GFLOP/s a training step sustains on `cpu`'s threads (one if unknown):
/// two f32 FMA pipes of its vector width at 3 GHz, of which a step keeps
/// about 40% busy (docs/distributed.md).
double estimateStepGflops(const CPUDescription &cpu);

/// Describes `cpu`: "native" reads this machine's features (cpuid) and
/// cache sizes (sysfs); an LLVM CPU name reads its features from LLVM's
/// description of that CPU, with typical cache sizes. Unknown names are an
/// error.
std::optional<CPUDescription> describeCPU(const std::string &cpu,
                                          std::string &error);

} // namespace tgc::cpu

#endif // TGC_TARGET_CPU_CPUTARGET_H
