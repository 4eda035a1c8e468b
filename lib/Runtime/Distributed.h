//===- Distributed.h - the processes of a data-parallel job -----*- C++ -*-===//
//
// The training loop (Main.cpp) and the compiled step of `tgc --data-parallel`
// see the job through these functions. libtgc_runtime.a defines them for one
// process (SingleProcess.cpp); the MPI runtime (MPI/MPIRuntime.cpp) defines
// them over Open MPI and is linked first, whole, into data-parallel
// executables, which run single-process exactly as before when not started
// by mpirun.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_DISTRIBUTED_H
#define TGC_RUNTIME_DISTRIBUTED_H

#include <cstdint>
#include <cstring>

extern "C" {
/// Joins the job (MPI_Init_thread under mpirun); call before anything else.
void tgc_dist_init(int *argc, char ***argv);
/// Leaves the job at a normal exit.
void tgc_dist_finalize(void);
/// Ends every process of the job (MPI_Abort): a rank that dies takes the
/// others with it instead of leaving them waiting in a collective.
void tgc_dist_abort(int code);
int tgc_dist_rank(void);
int tgc_dist_size(void);
/// Sums `values` over the processes, in place (blocking).
void tgc_dist_sum(double *values, int count);
/// The largest of each value over the processes, in place (blocking).
void tgc_dist_max(double *values, int count);
/// 1 when every process passed the same `value`.
int tgc_dist_all_equal(uint64_t value);
/// "Open MPI v4.1.4, 2 processes", or "" for one process.
const char *tgc_dist_description(void);
/// Seconds spent waiting for the step's collectives, and the time from their
/// start to their end, since the last call (for the summary).
void tgc_dist_take_times(double *waiting, double *inFlight, int64_t *count);

/// Called by the compiled step (tg.all_reduce_start / _wait): each
/// tgc_allreduce_add puts the `count` floats at `address` into the next
/// bucket; tgc_allreduce_start starts replacing every float x of the bucket
/// by Σ_processes weight · x and returns a request; after
/// tgc_collective_wait(request) the sums are in place.
void tgc_allreduce_add(int64_t address, int64_t count);
int64_t tgc_allreduce_start(float weight);
/// Completes the collective `request` of any *_start (its results are in
/// place afterwards).
void tgc_collective_wait(int64_t request);
/// Before a collective's wait, once per buffer it reads or writes:
/// ends the job if `address` is none of the request's (a miscompiled step).
void tgc_collective_holds(int64_t request, int64_t address);

/// ZeRO-1 (tgc --zero=1). A tensor of `count` floats is cut into shards of
/// `shard_count` = ceil(count / processes) floats; this process's is
/// elements rank·shard_count ..., zero padded past the end.
/// tgc_zero_add puts a (whole, shard) pair into the next bucket; then
/// tgc_reduce_scatter_start(weight) starts summing weight · whole over the
/// processes into each shard, and tgc_all_gather_start() starts writing
/// every process's shard into each whole tensor.
void tgc_zero_add(int64_t whole, int64_t count, int64_t shard,
                  int64_t shard_count);
/// The same for a tensor of 16-bit floats (ZeRO-3 gathers bf16-mixed
/// weights in bf16): only tgc_all_gather_start() takes these, in a bucket
/// of its own.
void tgc_zero_add16(int64_t whole, int64_t count, int64_t shard,
                    int64_t shard_count);
int64_t tgc_reduce_scatter_start(float weight);
int64_t tgc_all_gather_start(void);
/// Copies this process's shard of `whole` into `shard` (zero padded).
void tgc_shard_copy(int64_t whole, int64_t count, int64_t shard,
                    int64_t shard_count);
/// Sums `count` doubles at `address` over the processes, in place
/// (blocking).
void tgc_sum_over_processes(int64_t address, int64_t count);
/// Assembles on rank 0 the whole tensor (`count` floats) from every
/// process's shard (blocking; for checkpoints).
void tgc_dist_gather_shards(const float *shard, int64_t shard_count,
                            float *whole, int64_t count);
}

namespace tgc::runtime {
/// Elements of shard `rank` of a `count`-float tensor cut in `shard_count`.
inline int64_t shardElements(int64_t count, int64_t shardCount, int64_t rank) {
  int64_t left = count - rank * shardCount;
  return left <= 0 ? 0 : (left < shardCount ? left : shardCount);
}

/// A whole tensor and this process's shard of it (tgc_zero_add, of floats;
/// tgc_zero_add16, of 16-bit floats).
template <typename T> struct ShardPairOf {
  T *whole;
  int64_t count;
  T *shard;
  int64_t shardCount;

  int64_t elements(int rank) const {
    return shardElements(count, shardCount, rank);
  }
  /// Shard `rank` of the whole tensor into `shard`, zero padded.
  void cut(int rank) const {
    int64_t n = elements(rank);
    std::memcpy(shard, whole + rank * shardCount, sizeof(T) * n);
    std::memset(shard + n, 0, sizeof(T) * (shardCount - n));
  }
  /// `shard` back into its place (rank's) in the whole tensor.
  void place(int rank) const {
    std::memcpy(whole + rank * shardCount, shard, sizeof(T) * elements(rank));
  }
};
using ShardPair = ShardPairOf<float>;
using HalfShardPair = ShardPairOf<uint16_t>;
} // namespace tgc::runtime

#endif // TGC_RUNTIME_DISTRIBUTED_H
