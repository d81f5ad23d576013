// Memory read bandwidth of this machine right now: a sum over 256 MB on 2 OpenMP threads, three
// times. The shared machines' bandwidth varies (19.5 GB/s in most sessions, 5-6.5 GB/s during
// session 11's run O) while the in-cache matrix-product peak does not, and decoding streams the
// weights from memory at every step: run this beside `make bench` to know which machine the run had.
//   gcc -O3 -march=native -fopenmp tools/membw.c -o /tmp/membw && /tmp/membw
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(void) {
  const size_t n = (size_t)64 << 20;  // floats: 256 MB
  float* a = aligned_alloc(64, n * sizeof(float));
  if (!a) return 1;
  for (size_t i = 0; i < n; ++i) a[i] = 1.0f;
  for (int round = 0; round < 3; ++round) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double sum = 0;
#pragma omp parallel for reduction(+ : sum) num_threads(2)
    for (size_t i = 0; i < n; ++i) sum += a[i];
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("%.1f GB/s (sum %.0f)\n", (double)(n * sizeof(float)) / s / 1e9, sum);
  }
  free(a);
  return 0;
}
