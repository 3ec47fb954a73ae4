// cross_entropy over contiguous logits [N, C], one work-item per row.
// targets are i64 (index_is_64) or i32. A target outside [0, C) is an
// error: the kernel records the smallest offending row in *bad_row (the
// host initialises it to INT_MAX and reports it).

inline long pc_load_index(__global const int* p, long i, int is_64) {
  return is_64 ? ((__global const long*)p)[i] : (long)p[i];
}

inline WACC pc_logsumexp(__global const TS* x, long base, long c) {
  WACC m = -INFINITY;
  for (long j = 0; j < c; ++j) {
    WACC v = (WACC)LD(x, base + j);
    if (isnan(v)) return v;
    m = v > m ? v : m;
  }
  WACC s = 0;
  for (long j = 0; j < c; ++j) s += exp((WACC)LD(x, base + j) - m);
  return m + log(s);
}

__kernel void pc_cross_entropy_kernel(long n, long c, __global const TS* logits,
                                      __global const int* targets, int index_is_64,
                                      __global float* loss, __global int* bad_row) {
  long r = get_global_id(0);
  if (r >= n) return;
  long t = pc_load_index(targets, r, index_is_64);
  if (t < 0 || t >= c) {
    atomic_min(bad_row, (int)r);
    loss[r] = NAN;
    return;
  }
  long base = r * c;
  loss[r] = (float)(pc_logsumexp(logits, base, c) - (WACC)LD(logits, base + t));
}

__kernel void pc_cross_entropy_backward_kernel(long n, long c, __global const TS* logits,
                                               __global const int* targets, int index_is_64,
                                               __global const float* dloss, __global TS* dlogits,
                                               __global int* bad_row) {
  long r = get_global_id(0);
  if (r >= n) return;
  long t = pc_load_index(targets, r, index_is_64);
  if (t < 0 || t >= c) {
    atomic_min(bad_row, (int)r);
    return;
  }
  long base = r * c;
  WACC lse = pc_logsumexp(logits, base, c);
  WACC g = (WACC)dloss[r];
  for (long j = 0; j < c; ++j) {
    WACC p = exp((WACC)LD(logits, base + j) - lse);
    ST(dlogits, base + j, g * (p - (j == t ? (WACC)1 : (WACC)0)));
  }
}
