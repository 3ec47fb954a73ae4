// Softmax family over contiguous tensors viewed as [outer, len, inner]
// (len = the softmax axis): one work-item per (outer, inner) row.

#define PC_ROW_INDEX(k) (base + (k)*inner)

inline long pc_row_base(long row, long len, long inner) {
  long o = row / inner;
  long i = row - o * inner;
  return o * len * inner + i;
}

inline ACC pc_row_max(__global const TS* x, long base, long len, long inner) {
  ACC m = -INFINITY;
  for (long k = 0; k < len; ++k) {
    ACC v = LD(x, PC_ROW_INDEX(k));
    if (isnan(v)) return v;
    m = v > m ? v : m;
  }
  return m;
}

// log: 0 softmax, 1 log_softmax.
__kernel void pc_softmax_kernel(long outer, long len, long inner, int log_form,
                                __global const TS* x, __global TS* y) {
  long row = get_global_id(0);
  if (row >= outer * inner) return;
  long base = pc_row_base(row, len, inner);
  WACC m = (WACC)pc_row_max(x, base, len, inner);
  WACC s = 0;
  for (long k = 0; k < len; ++k) s += exp((WACC)LD(x, PC_ROW_INDEX(k)) - m);
  WACC ls = log(s);
  for (long k = 0; k < len; ++k) {
    WACC z = (WACC)LD(x, PC_ROW_INDEX(k)) - m;
    ST(y, PC_ROW_INDEX(k), log_form ? z - ls : exp(z) / s);
  }
}

// softmax_backward: dx = y (dy - sum(dy y)); log form: dx = dy - exp(y) sum(dy).
__kernel void pc_softmax_backward_kernel(long outer, long len, long inner, int log_form,
                                         __global const TS* dy, __global const TS* y,
                                         __global TS* dx) {
  long row = get_global_id(0);
  if (row >= outer * inner) return;
  long base = pc_row_base(row, len, inner);
  WACC s = 0;
  for (long k = 0; k < len; ++k) {
    WACC g = (WACC)LD(dy, PC_ROW_INDEX(k));
    s += log_form ? g : g * (WACC)LD(y, PC_ROW_INDEX(k));
  }
  for (long k = 0; k < len; ++k) {
    WACC g = (WACC)LD(dy, PC_ROW_INDEX(k));
    WACC v = (WACC)LD(y, PC_ROW_INDEX(k));
    ST(dx, PC_ROW_INDEX(k), log_form ? g - exp(v) * s : v * (g - s));
  }
}
