//===- SingleProcess.cpp - the job of one process -------------------------===//
//
// Distributed.h for executables without MPI: one process, and the step's
// all-reduce is the weighted input itself (the weight is 1).
//
//===----------------------------------------------------------------------===//

#include "Distributed.h"

#include <cstdlib>
#include <utility>
#include <vector>

extern "C" {
void tgc_dist_init(int *, char ***) {}
void tgc_dist_finalize(void) {}
void tgc_dist_abort(int code) { std::exit(code); }
int tgc_dist_rank(void) { return 0; }
int tgc_dist_size(void) { return 1; }
void tgc_dist_sum(double *, int) {}
void tgc_dist_max(double *, int) {}
int tgc_dist_all_equal(uint64_t) { return 1; }
const char *tgc_dist_description(void) { return ""; }
void tgc_dist_take_times(double *waiting, double *inFlight, int64_t *count) {
  *waiting = *inFlight = 0;
  *count = 0;
}
}

namespace {
std::vector<std::pair<float *, int64_t>> bucket;
std::vector<tgc::runtime::ShardPair> shardBucket;
std::vector<tgc::runtime::HalfShardPair> halfBucket;

float *pointer(int64_t address) { return reinterpret_cast<float *>(address); }
} // namespace

extern "C" {
void tgc_allreduce_add(int64_t address, int64_t count) {
  bucket.push_back({reinterpret_cast<float *>(address), count});
}

int64_t tgc_allreduce_start(float weight) {
  if (weight != 1.0f)
    for (auto [x, count] : bucket)
      for (int64_t i = 0; i < count; ++i)
        x[i] *= weight;
  bucket.clear();
  return 0;
}
void tgc_collective_wait(int64_t) {}
}

// ZeRO-1 in one process: the only shard is rank 0's.
extern "C" {
void tgc_zero_add(int64_t whole, int64_t count, int64_t shard,
                  int64_t shardCount) {
  shardBucket.push_back({pointer(whole), count, pointer(shard), shardCount});
}

int64_t tgc_reduce_scatter_start(float weight) {
  for (const tgc::runtime::ShardPair &p : shardBucket) {
    if (weight != 1.0f)
      for (int64_t i = 0; i < p.count; ++i)
        p.whole[i] *= weight;
    p.cut(0);
  }
  shardBucket.clear();
  return 0;
}

void tgc_zero_add16(int64_t whole, int64_t count, int64_t shard,
                    int64_t shardCount) {
  halfBucket.push_back({reinterpret_cast<uint16_t *>(whole), count,
                        reinterpret_cast<uint16_t *>(shard), shardCount});
}

int64_t tgc_all_gather_start(void) {
  for (const tgc::runtime::ShardPair &p : shardBucket)
    p.place(0);
  for (const tgc::runtime::HalfShardPair &p : halfBucket)
    p.place(0);
  shardBucket.clear();
  halfBucket.clear();
  return 0;
}

void tgc_shard_copy(int64_t whole, int64_t count, int64_t shard,
                    int64_t shardCount) {
  tgc::runtime::ShardPair{pointer(whole), count, pointer(shard), shardCount}
      .cut(0);
}

void tgc_sum_over_processes(int64_t, int64_t) {}

// One process completes each collective at its start: nothing to check.
void tgc_collective_holds(int64_t, int64_t) {}

void tgc_dist_gather_shards(const float *shard, int64_t shardCount,
                            float *whole, int64_t count) {
  tgc::runtime::ShardPair{whole, count, const_cast<float *>(shard), shardCount}
      .place(0);
}
}
