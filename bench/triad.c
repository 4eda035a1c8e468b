/* Memory bandwidth, STREAM's triad a[i] = b[i] + s * c[i] over arrays far
 * larger than the caches, on OpenMP threads: the figure decode speed is
 * measured against (bench/decode_speed.py). Prints GB/s counting the three
 * arrays' bytes (two read, one written) of the best of several passes. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 64L << 20; /* floats per array */
  int passes = argc > 2 ? atoi(argv[2]) : 10;
  float *a = aligned_alloc(64, n * sizeof(float));
  float *b = aligned_alloc(64, n * sizeof(float));
  float *c = aligned_alloc(64, n * sizeof(float));
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    a[i] = 0;
    b[i] = 1;
    c[i] = 2;
  }
  double best = 1e30;
  for (int p = 0; p < passes; ++p) {
    double t = omp_get_wtime();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i)
      a[i] = b[i] + 0.5f * c[i];
    t = omp_get_wtime() - t;
    if (t < best)
      best = t;
  }
  printf("%.2f\n", 3.0 * n * sizeof(float) / best / 1e9);
  return a[n / 2] == 2.0f ? 0 : 1;
}
