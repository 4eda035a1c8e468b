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
void tgc_allreduce_wait(int64_t) {}
}
