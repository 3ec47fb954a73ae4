// embedding gather and its deterministic backward. ids are i64 or i32; an
// id outside [0, V) records the smallest offending position in *bad_row.

inline long pc_load_id(__global const int* p, long i, int is_64) {
  return is_64 ? ((__global const long*)p)[i] : (long)p[i];
}

// One work-item per output element out[n, j].
__kernel void pc_embedding_kernel(long n, long v, long d, __global const int* ids, int index_is_64,
                                  __global const TS* weight, __global TS* out,
                                  __global int* bad_row) {
  long gid = get_global_id(0);
  if (gid >= n * d) return;
  long r = gid / d, j = gid - r * d;
  long id = pc_load_id(ids, r, index_is_64);
  if (id < 0 || id >= v) {
    atomic_min(bad_row, (int)r);
    return;
  }
  ST(out, gid, LD(weight, id * d + j));
}

// One work-item per column j: walks n in order, accumulating into the
// scratch acc [V, D] (zeroed by the host), then rounds once into dweight.
// The order of additions is fixed, so results are bitwise reproducible.
__kernel void pc_embedding_backward_kernel(long n, long v, long d, __global const int* ids,
                                           int index_is_64, __global const TS* dout,
                                           __global ACC* acc, __global TS* dweight,
                                           __global int* bad_row) {
  long j = get_global_id(0);
  if (j >= d) return;
  for (long r = 0; r < n; ++r) {
    long id = pc_load_id(ids, r, index_is_64);
    if (id < 0 || id >= v) {
      atomic_min(bad_row, (int)r);
      continue;
    }
    acc[id * d + j] += (ACC)LD(dout, r * d + j);
  }
  for (long row = 0; row < v; ++row) ST(dweight, row * d + j, acc[row * d + j]);
}
