/* Harness of bench/gemm.py: times one tgc-compiled f32 matmul.
 *
 *   gemm_harness M N K MIN_REPS MAX_REPS TARGET_SECONDS CHECK_MACS
 *
 * The linked object defines `void tgc_mm(void **buffers)` (tgc-emit-c-entry)
 * with buffers = {A (MxK), B (KxN), C (MxN, the out-parameter)}, all dense
 * row-major f32. A and B get uniform random values in [-1, 1); C starts as
 * NaN, so an element the code does not write shows up as an error.
 *
 * Check (once, on the first call's result): against a double-precision
 * naive product, err(i,j) = |C - ref| / sum_k |A(i,k) B(k,j)| (the
 * error relative to what rounding can do to that dot product; it does not
 * blow up where ref is near 0). All rows are checked when M*N*K <=
 * CHECK_MACS, otherwise the first 8, the last 8 (remainder tiles) and
 * evenly spaced rows in between, within that budget; always every column.
 * Exits 2 when the maximum is above 1e-4 or not a number.
 *
 * Timing: one more warm-up call is timed; then reps = TARGET_SECONDS / that,
 * clamped to [MIN_REPS, MAX_REPS], calls are timed one by one and the median
 * is printed. Output: key=value lines.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void tgc_mm(void **buffers);

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) { /* xorshift64*, [-1, 1) */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  uint64_t x = rng * 0x2545f4914f6cdd1dull;
  return (float)((double)(x >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *alloc(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "gemm_harness: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr,
            "usage: %s M N K MIN_REPS MAX_REPS TARGET_SECONDS CHECK_MACS\n",
            argv[0]);
    return 1;
  }
  int64_t m = atoll(argv[1]), n = atoll(argv[2]), k = atoll(argv[3]);
  int minReps = atoi(argv[4]), maxReps = atoi(argv[5]);
  double target = atof(argv[6]), checkMacs = atof(argv[7]);
  if (m <= 0 || n <= 0 || k <= 0 || minReps < 1 || maxReps < minReps) {
    fprintf(stderr, "gemm_harness: bad arguments\n");
    return 1;
  }
  float *a = alloc(sizeof(float) * m * k), *b = alloc(sizeof(float) * k * n);
  float *c = alloc(sizeof(float) * m * n);
  for (int64_t i = 0; i < m * k; ++i)
    a[i] = uniform();
  for (int64_t i = 0; i < k * n; ++i)
    b[i] = uniform();
  for (int64_t i = 0; i < m * n; ++i)
    c[i] = NAN;
  void *buffers[3] = {a, b, c};

  double t0 = now();
  tgc_mm(buffers);
  double first = now() - t0;

  /* The check, on the first result. */
  double *ref = alloc(sizeof(double) * n), *mag = alloc(sizeof(double) * n);
  double macsPerRow = (double)n * (double)k;
  int64_t rows = m;
  if ((double)m * macsPerRow > checkMacs) {
    rows = (int64_t)(checkMacs / macsPerRow);
    if (rows < 24)
      rows = 24;
    if (rows > m)
      rows = m;
  }
  double maxErr = 0;
  int64_t worstI = -1, worstJ = -1, checked = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t i;
    if (rows == m)
      i = r;
    else if (r < 8)
      i = r;
    else if (r >= rows - 8)
      i = m - (rows - r);
    else /* evenly spaced in [8, m - 8) */
      i = 8 + (r - 8) * (m - 16) / (rows - 16);
    memset(ref, 0, sizeof(double) * n);
    memset(mag, 0, sizeof(double) * n);
    for (int64_t p = 0; p < k; ++p) {
      double x = a[i * k + p];
      const float *row = b + p * n;
      for (int64_t j = 0; j < n; ++j) {
        ref[j] += x * (double)row[j];
        mag[j] += fabs(x * (double)row[j]);
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      double err =
          fabs((double)c[i * n + j] - ref[j]) / (mag[j] > 0 ? mag[j] : 1.0);
      if (!(err <= maxErr)) { /* also catches NaN */
        maxErr = err;
        worstI = i, worstJ = j;
        if (isnan(err))
          break;
      }
    }
    ++checked;
    if (isnan(maxErr))
      break;
  }
  printf("max_rel_err=%.3e\nchecked_rows=%lld\n", maxErr, (long long)checked);
  if (!(maxErr <= 1e-4)) {
    fprintf(stderr,
            "gemm_harness: WRONG RESULT for %lldx%lldx%lld: max relative error "
            "%.3e "
            "at C[%lld][%lld] = %g (reference %g)\n",
            (long long)m, (long long)n, (long long)k, maxErr, (long long)worstI,
            (long long)worstJ,
            worstI >= 0 ? (double)c[worstI * n + worstJ] : 0.0,
            worstI >= 0 ? ref[worstJ] : 0.0);
    return 2;
  }

  /* Timing. */
  t0 = now();
  tgc_mm(buffers);
  double warm = now() - t0;
  int reps = warm > 0 ? (int)ceil(target / warm) : maxReps;
  if (reps < minReps)
    reps = minReps;
  if (reps > maxReps)
    reps = maxReps;
  double *times = alloc(sizeof(double) * reps);
  for (int r = 0; r < reps; ++r) {
    t0 = now();
    tgc_mm(buffers);
    times[r] = now() - t0;
  }
  qsort(times, reps, sizeof(double), compare);
  double median = reps % 2 ? times[reps / 2]
                           : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
  printf("first_call_s=%.6e\nreps=%d\nmedian_s=%.6e\nmin_s=%.6e\n", first, reps,
         median, times[0]);
  return 0;
}
