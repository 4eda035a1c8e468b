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
/// tgc_allreduce_wait(request) the sums are in place.
void tgc_allreduce_add(int64_t address, int64_t count);
int64_t tgc_allreduce_start(float weight);
void tgc_allreduce_wait(int64_t request);
}

#endif // TGC_RUNTIME_DISTRIBUTED_H
