// Reductions along one axis over arbitrary strides: one work-item per output
// element. Tensor 0 of the layout is x, tensor 1 is y (y's stride along the
// axis is never used). Sums accumulate in WACC (double where available).

#define PC_SUM 0
#define PC_MEAN 1
#define PC_MAX 2
#define PC_L2 3

// Offsets of x and y for output element `out_index` (row-major over x's
// shape with the axis removed).
inline void pc_reduction_offsets(const pc_layout* l, int axis, long out_index, long* x_off,
                                 long* y_off) {
  long xo = l->offset[0], yo = l->offset[1];
  for (int d = (int)l->rank - 1; d >= 0; --d) {
    if (d == axis) continue;
    long n = l->shape[d];
    long q = out_index / n;
    long r = out_index - q * n;
    xo += r * l->stride[0][d];
    yo += r * l->stride[1][d];
    out_index = q;
  }
  *x_off = xo;
  *y_off = yo;
}

__kernel void pc_reduce_kernel(pc_layout l, int axis, int op, long num_out, __global const TS* x,
                               __global TS* y) {
  long o = get_global_id(0);
  if (o >= num_out) return;
  long xo, yo;
  pc_reduction_offsets(&l, axis, o, &xo, &yo);
  long len = l.shape[axis];
  long step = l.stride[0][axis];
  if (op == PC_MAX) {
    ACC m = -INFINITY;
    for (long k = 0; k < len; ++k) {
      ACC v = LD(x, xo + k * step);
      if (isnan(v)) {
        m = v;
        break;
      }
      m = v > m ? v : m;
    }
    ST(y, yo, m);
    return;
  }
  WACC s = 0;
  for (long k = 0; k < len; ++k) {
    WACC v = (WACC)LD(x, xo + k * step);
    s += op == PC_L2 ? v * v : v;
  }
  if (op == PC_MEAN) s = s / (WACC)len;
  if (op == PC_L2) s = sqrt(s);
  ST(y, yo, s);
}

// argmax: index of the first maximum; the first NaN counts as the maximum.
// y is i64 (index_is_64 != 0) or i32, passed as raw int storage.
__kernel void pc_argmax_kernel(pc_layout l, int axis, long num_out, __global const TS* x,
                               __global int* y, int index_is_64) {
  long o = get_global_id(0);
  if (o >= num_out) return;
  long xo, yo;
  pc_reduction_offsets(&l, axis, o, &xo, &yo);
  long len = l.shape[axis];
  long step = l.stride[0][axis];
  long best = 0;
  ACC m = LD(x, xo);
  if (!isnan(m)) {
    for (long k = 1; k < len; ++k) {
      ACC v = LD(x, xo + k * step);
      if (isnan(v)) {
        best = k;
        break;
      }
      if (v > m) {
        m = v;
        best = k;
      }
    }
  }
  if (index_is_64)
    ((__global long*)y)[yo] = best;
  else
    y[yo] = (int)best;
}
