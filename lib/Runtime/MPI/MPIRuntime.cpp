//===- MPIRuntime.cpp - Distributed.h over Open MPI -----------------------===//
//
// Linked whole, before libtgc_runtime.a, into `tgc --data-parallel`
// executables. Under mpirun every process joins MPI_COMM_WORLD; started
// without mpirun, the executable is one process and never touches MPI.
//
// The step's all-reduces are non-blocking (MPI_Iallreduce in place) and Open
// MPI progresses them only inside MPI calls, so every start also tests the
// requests still in flight: communication advances while the backward pass
// runs, at each gradient boundary.
//
//===----------------------------------------------------------------------===//

#include "../Distributed.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

bool active = false; // under mpirun, MPI initialised
int rank = 0, size = 1;
std::string description;

using tgc::runtime::HalfShardPair;
using tgc::runtime::ShardPair;

enum class Collective { AllReduce, ReduceScatter, AllGather };

struct InFlight {
  Collective kind = Collective::AllReduce;
  MPI_Request request = MPI_REQUEST_NULL;
  double started = 0, finished = 0;
  bool done = true;   // MPI completed it (possibly in progress())
  bool waited = true; // the step waited for it: the slot is free
  // A bucket of several tensors is summed in one contiguous copy, unpacked
  // by the wait.
  std::vector<std::pair<float *, int64_t>> pieces;
  std::vector<float> packed;
  // A reduce-scatter's (whole, shard) pairs; a bucket of several is sent
  // packed (`packed` receives); per-process counts and offsets of a single
  // one (MPI reads them until the collective completes).
  std::vector<ShardPair> shardPieces;
  std::vector<float> sent;
  // An all-gather: one MPI_Iallgatherv per tensor straight into it
  // (`request` is the first, `more` the others), with each one's counts
  // and offsets.
  std::vector<MPI_Request> more;
  std::vector<std::vector<int>> moreCounts, moreOffsets;
  std::vector<int> counts, offsets;
  // Every buffer of the step the collective reads or writes.
  std::vector<const float *> held;
};
std::vector<InFlight> requests;
std::vector<std::pair<float *, int64_t>> bucket; // the next start's tensors
std::vector<ShardPair> shardBucket;              // the next ZeRO-1 start's
std::vector<HalfShardPair> halfBucket;           // the next 16-bit gather's
double waitingSeconds = 0, inFlightSeconds = 0;
int64_t collectives = 0;

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool launchedByMpirun() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name))
      return true;
  return false;
}

void progress();

/// A free slot for a collective being started (after letting those in
/// flight progress).
int64_t startRequest(Collective kind) {
  progress();
  int64_t id = 0;
  while (id < static_cast<int64_t>(requests.size()) && !requests[id].waited)
    ++id;
  if (id == static_cast<int64_t>(requests.size()))
    requests.emplace_back();
  InFlight &r = requests[id];
  r.kind = kind;
  r.done = false;
  r.waited = false;
  r.started = now();
  r.packed.clear();
  r.pieces.clear();
  r.shardPieces.clear();
  r.sent.clear();
  r.more.clear();
  r.moreCounts.clear();
  r.moreOffsets.clear();
  r.held.clear();
  return id;
}

/// Floats of one process's shards of a packed ZeRO-1 bucket.
int64_t blockOf(const std::vector<ShardPair> &pieces) {
  int64_t block = 0;
  for (const ShardPair &p : pieces)
    block += p.shardCount;
  return block;
}

/// Records the pieces of the ZeRO-1 collective `id` just started.
int64_t started(int64_t id, std::vector<ShardPair> pieces) {
  InFlight &r = requests[id];
  for (const ShardPair &p : pieces) {
    r.held.push_back(p.whole);
    r.held.push_back(p.shard);
  }
  r.shardPieces = std::move(pieces);
  ++collectives;
  return id;
}

/// MPI counts are ints.
int mpiCount(int64_t count) {
  if (count > INT32_MAX) {
    std::fprintf(stderr,
                 "error: a ZeRO-1 shard of %lld floats is larger than "
                 "one MPI message can be\n",
                 (long long)count);
    tgc_dist_abort(1);
  }
  return static_cast<int>(count);
}

/// Each process's element count and offset in a `count`-float tensor cut
/// into shards of `shardCount` (the counts and displacements of MPI's
/// v-collectives).
void shardLayout(int64_t count, int64_t shardCount, std::vector<int> &counts,
                 std::vector<int> &offsets) {
  counts.assign(size, 0);
  offsets.assign(size, 0);
  for (int q = 0; q < size; ++q) {
    counts[q] = mpiCount(tgc::runtime::shardElements(count, shardCount, q));
    offsets[q] = mpiCount(q * shardCount);
  }
}

/// Lets MPI advance the collectives in flight, noting those that finished.
void progress() {
  for (InFlight &r : requests) {
    if (r.done)
      continue;
    int flag = 0;
    MPI_Test(&r.request, &flag, MPI_STATUS_IGNORE);
    if (flag && !r.more.empty())
      MPI_Testall(static_cast<int>(r.more.size()), r.more.data(), &flag,
                  MPI_STATUSES_IGNORE);
    if (flag) {
      r.done = true;
      r.finished = now();
    }
  }
}

/// One MPI_Iallgatherv per (whole, shard) pair of `T` (`type`), each from
/// the shard straight into its whole tensor, completed together by the wait.
template <typename T>
int64_t startGathers(const std::vector<tgc::runtime::ShardPairOf<T>> &pieces,
                     MPI_Datatype type) {
  int64_t id = startRequest(Collective::AllGather);
  InFlight &r = requests[id];
  r.moreCounts.resize(pieces.size());
  r.moreOffsets.resize(pieces.size());
  r.more.assign(pieces.size() - 1, MPI_REQUEST_NULL);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const tgc::runtime::ShardPairOf<T> &p = pieces[i];
    shardLayout(p.count, p.shardCount, r.moreCounts[i], r.moreOffsets[i]);
    MPI_Iallgatherv(p.shard, r.moreCounts[i][rank], type, p.whole,
                    r.moreCounts[i].data(), r.moreOffsets[i].data(), type,
                    MPI_COMM_WORLD, i == 0 ? &r.request : &r.more[i - 1]);
    r.held.push_back(reinterpret_cast<const float *>(p.whole));
    r.held.push_back(reinterpret_cast<const float *>(p.shard));
  }
  ++collectives;
  return id;
}

} // namespace

extern "C" {

void tgc_dist_init(int *argc, char ***argv) {
  if (!launchedByMpirun())
    return;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  active = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string library(version, strnlen(version, sizeof version));
  library = library.substr(0, library.find(','));
  description = library + ", " + std::to_string(size) + " processes";
}

void tgc_dist_finalize(void) {
  if (active)
    MPI_Finalize();
  active = false;
}

void tgc_dist_abort(int code) {
  if (active && size > 1)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

int tgc_dist_rank(void) { return rank; }
int tgc_dist_size(void) { return size; }

void tgc_dist_sum(double *values, int count) {
  if (active && size > 1)
    MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
}

void tgc_dist_max(double *values, int count) {
  if (active && size > 1)
    MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
}

int tgc_dist_all_equal(uint64_t value) {
  if (!active || size == 1)
    return 1;
  uint64_t range[2] = {value, ~value}; // max of value and of its complement
  MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return range[0] == value && range[1] == ~value;
}

const char *tgc_dist_description(void) { return description.c_str(); }

void tgc_dist_take_times(double *waiting, double *inFlight, int64_t *count) {
  *waiting = waitingSeconds;
  *inFlight = inFlightSeconds;
  *count = collectives;
  waitingSeconds = inFlightSeconds = 0;
  collectives = 0;
}

void tgc_allreduce_add(int64_t address, int64_t count) {
  bucket.push_back({reinterpret_cast<float *>(address), count});
}

int64_t tgc_allreduce_start(float weight) {
  std::vector<std::pair<float *, int64_t>> pieces;
  pieces.swap(bucket);
  if (weight != 1.0f)
    for (auto [x, count] : pieces)
      for (int64_t i = 0; i < count; ++i)
        x[i] *= weight;
  if (!active || size == 1)
    return -1;
  int64_t id = startRequest(Collective::AllReduce);
  InFlight &r = requests[id];
  for (auto [p, n] : pieces)
    r.held.push_back(p);
  float *x = pieces.empty() ? nullptr : pieces.front().first;
  int64_t count = pieces.empty() ? 0 : pieces.front().second;
  if (pieces.size() > 1) {
    // One message for the bucket: packed here, unpacked by the wait.
    for (auto [p, n] : pieces)
      r.packed.insert(r.packed.end(), p, p + n);
    r.pieces = std::move(pieces);
    x = r.packed.data();
    count = static_cast<int64_t>(r.packed.size());
  }
  // MPI counts are ints: a larger tensor goes in blocking pieces first
  // (2^30 floats is 4 GiB).
  const int64_t maxCount = 1 << 30;
  while (count > maxCount) {
    MPI_Allreduce(MPI_IN_PLACE, x, static_cast<int>(maxCount), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
    x += maxCount;
    count -= maxCount;
  }
  MPI_Iallreduce(MPI_IN_PLACE, x, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                 MPI_COMM_WORLD, &r.request);
  ++collectives;
  return id;
}

void tgc_collective_wait(int64_t id) {
  if (id < 0)
    return;
  InFlight &r = requests[id];
  if (!r.done) {
    double t0 = now();
    MPI_Wait(&r.request, MPI_STATUS_IGNORE);
    if (!r.more.empty())
      MPI_Waitall(static_cast<int>(r.more.size()), r.more.data(),
                  MPI_STATUSES_IGNORE);
    r.finished = now();
    r.done = true;
    waitingSeconds += r.finished - t0;
  }
  inFlightSeconds += r.finished - r.started;
  const float *sums = r.packed.data();
  for (auto [p, n] : r.pieces) {
    std::memcpy(p, sums, sizeof(float) * n);
    sums += n;
  }
  if (r.shardPieces.size() > 1) {
    // A packed reduce-scatter bucket: this process's shards in piece order.
    int64_t offset = 0;
    for (const ShardPair &p : r.shardPieces) {
      std::memcpy(p.shard, r.packed.data() + offset,
                  sizeof(float) * p.shardCount);
      offset += p.shardCount;
    }
  }
  r.pieces.clear();
  r.shardPieces.clear();
  r.waited = true;
}

void tgc_zero_add(int64_t whole, int64_t count, int64_t shard,
                  int64_t shardCount) {
  shardBucket.push_back({reinterpret_cast<float *>(whole), count,
                         reinterpret_cast<float *>(shard), shardCount});
}

int64_t tgc_reduce_scatter_start(float weight) {
  std::vector<ShardPair> pieces;
  pieces.swap(shardBucket);
  if (weight != 1.0f)
    for (const ShardPair &p : pieces)
      for (int64_t i = 0; i < p.count; ++i)
        p.whole[i] *= weight;
  if (!active || size == 1) {
    for (const ShardPair &p : pieces)
      p.cut(0);
    return -1;
  }
  int64_t id = startRequest(Collective::ReduceScatter);
  InFlight &r = requests[id];
  if (pieces.size() == 1) {
    // In place from the gradient into the shard: process q receives its
    // (possibly short, possibly empty) part; the padding stays zero.
    const ShardPair &p = pieces.front();
    shardLayout(p.count, p.shardCount, r.counts, r.offsets);
    std::memset(p.shard + p.elements(rank), 0,
                sizeof(float) * (p.shardCount - p.elements(rank)));
    MPI_Ireduce_scatter(p.whole, p.shard, r.counts.data(), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD, &r.request);
  } else {
    // One block per process: its (zero padded) shard of every piece.
    int64_t block = blockOf(pieces);
    r.sent.assign(block * size, 0.0f);
    int64_t offset = 0;
    for (const ShardPair &p : pieces) {
      for (int q = 0; q < size; ++q)
        std::memcpy(r.sent.data() + q * block + offset,
                    p.whole + q * p.shardCount, sizeof(float) * p.elements(q));
      offset += p.shardCount;
    }
    r.packed.assign(block, 0.0f);
    MPI_Ireduce_scatter_block(r.sent.data(), r.packed.data(), mpiCount(block),
                              MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r.request);
  }
  return started(id, std::move(pieces));
}

void tgc_zero_add16(int64_t whole, int64_t count, int64_t shard,
                    int64_t shardCount) {
  halfBucket.push_back({reinterpret_cast<uint16_t *>(whole), count,
                        reinterpret_cast<uint16_t *>(shard), shardCount});
}

int64_t tgc_all_gather_start(void) {
  std::vector<ShardPair> pieces;
  pieces.swap(shardBucket);
  std::vector<HalfShardPair> half;
  half.swap(halfBucket);
  if (!active || size == 1) {
    for (const ShardPair &p : pieces)
      p.place(0);
    for (const HalfShardPair &p : half)
      p.place(0);
    return -1;
  }
  // ZeRO-3's 16-bit weights come in a bucket of their own.
  return half.empty() ? startGathers(pieces, MPI_FLOAT)
                      : startGathers(half, MPI_UINT16_T);
}

void tgc_collective_holds(int64_t id, int64_t address) {
  if (id < 0)
    return;
  const std::vector<const float *> &held = requests[id].held;
  if (std::find(held.begin(), held.end(),
                reinterpret_cast<const float *>(address)) != held.end())
    return;
  std::fprintf(stderr,
               "error (rank %d): internal error: the step waits for a "
               "collective with a buffer it did not start with\n",
               rank);
  tgc_dist_abort(1);
}

void tgc_shard_copy(int64_t whole, int64_t count, int64_t shard,
                    int64_t shardCount) {
  ShardPair{reinterpret_cast<float *>(whole), count,
            reinterpret_cast<float *>(shard), shardCount}
      .cut(rank);
}

void tgc_sum_over_processes(int64_t address, int64_t count) {
  tgc_dist_sum(reinterpret_cast<double *>(address), static_cast<int>(count));
}

void tgc_dist_gather_shards(const float *shard, int64_t shardCount,
                            float *whole, int64_t count) {
  if (!active || size == 1) {
    ShardPair{whole, count, const_cast<float *>(shard), shardCount}.place(0);
    return;
  }
  std::vector<int> counts, offsets;
  shardLayout(count, shardCount, counts, offsets);
  MPI_Gatherv(shard, counts[rank], MPI_FLOAT, whole, counts.data(),
              offsets.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
}
}
