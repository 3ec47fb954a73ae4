/* Open MPI's MPI_Allreduce timed the way `polychip comm-perf` times its
 * all-reduce (f32 sum, out of place, warm-up calls, then the mean of `iters`
 * calls, the slowest rank's), so compare_peers.py can print the two side by
 * side. Usage: mpirun -np N mpi_allreduce_bench BYTES ITERS WARMUP
 * Rank 0 prints {"seconds": S, "ok": true|false} (ok: every element exact). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (argc != 4) {
    if (rank == 0) fprintf(stderr, "usage: %s BYTES ITERS WARMUP\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long count = atol(argv[1]) / 4 > 0 ? atol(argv[1]) / 4 : 1;
  const int iters = atoi(argv[2]), warmup = atoi(argv[3]);
  float* in = malloc(count * sizeof(float));
  float* out = malloc(count * sizeof(float));
  if (!in || !out || iters < 1 || warmup < 0) MPI_Abort(MPI_COMM_WORLD, 2);
  for (long i = 0; i < count; ++i) in[i] = (float)(rank + 1);
  for (int i = 0; i < warmup; ++i)
    MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i)
    MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double seconds = (MPI_Wtime() - start) / iters, slowest = 0;
  MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  const float expected = (float)world * (world + 1) / 2;
  int ok = 1, all_ok = 0;
  for (long i = 0; i < count; ++i) ok &= out[i] == expected;
  MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("{\"seconds\": %.9g, \"ok\": %s}\n", slowest, all_ok ? "true" : "false");
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
