// Scaled dot-product attention over contiguous [B, H, S, D] (D <= PC_MAX_D;
// the host refuses larger heads). Forward: one work-item per query row,
// two passes (log-sum-exp, then the weighted sum of v). Backward: one
// work-item per query row for dq and one per key row for dk and dv, with
// probabilities recomputed from the saved lse.

#define PC_MAX_D 256

inline WACC pc_dot(__global const TS* p, long pb, __global const TS* q, long qb, long d) {
  WACC s = 0;
  for (long e = 0; e < d; ++e) s += (WACC)LD(p, pb + e) * (WACC)LD(q, qb + e);
  return s;
}

__kernel void pc_attention_kernel(long rows, long s_len, long d, ACC scale, int causal,
                                  __global const TS* q, __global const TS* k, __global const TS* v,
                                  __global TS* o, __global float* lse) {
  long row = get_global_id(0);  // (b, h, i) flattened
  if (row >= rows) return;
  long i = row % s_len;
  long head = (row - i) * d;  // element offset of [b, h, 0, 0]
  long qb = row * d;
  long jmax = causal ? i + 1 : s_len;
  WACC m = -INFINITY;
  for (long j = 0; j < jmax; ++j) {
    WACC s = (WACC)scale * pc_dot(q, qb, k, head + j * d, d);
    m = s > m ? s : m;
  }
  WACC l = 0;
  for (long j = 0; j < jmax; ++j) l += exp((WACC)scale * pc_dot(q, qb, k, head + j * d, d) - m);
  WACC ls = m + log(l);
  WACC acc[PC_MAX_D];
  for (long e = 0; e < d; ++e) acc[e] = 0;
  for (long j = 0; j < jmax; ++j) {
    WACC p = exp((WACC)scale * pc_dot(q, qb, k, head + j * d, d) - ls);
    for (long e = 0; e < d; ++e) acc[e] += p * (WACC)LD(v, head + j * d + e);
  }
  for (long e = 0; e < d; ++e) ST(o, qb + e, acc[e]);
  lse[row] = (float)ls;
}

// dq_i = scale sum_j p_ij (do_i . v_j - do_i . o_i) k_j
__kernel void pc_attention_backward_dq_kernel(long rows, long s_len, long d, ACC scale, int causal,
                                              __global const TS* d_o, __global const TS* q,
                                              __global const TS* k, __global const TS* v,
                                              __global const TS* o, __global const float* lse,
                                              __global TS* dq) {
  long row = get_global_id(0);
  if (row >= rows) return;
  long i = row % s_len;
  long head = (row - i) * d;
  long qb = row * d;
  long jmax = causal ? i + 1 : s_len;
  WACC di = pc_dot(d_o, qb, o, qb, d);
  WACC ls = (WACC)lse[row];
  WACC acc[PC_MAX_D];
  for (long e = 0; e < d; ++e) acc[e] = 0;
  for (long j = 0; j < jmax; ++j) {
    long kb = head + j * d;
    WACC p = exp((WACC)scale * pc_dot(q, qb, k, kb, d) - ls);
    WACC ds = p * (pc_dot(d_o, qb, v, kb, d) - di);
    for (long e = 0; e < d; ++e) acc[e] += ds * (WACC)LD(k, kb + e);
  }
  for (long e = 0; e < d; ++e) ST(dq, qb + e, (WACC)scale * acc[e]);
}

// dv_j = sum_i p_ij do_i; dk_j = scale sum_i p_ij (do_i . v_j - do_i . o_i) q_i
__kernel void pc_attention_backward_dkdv_kernel(long rows, long s_len, long d, ACC scale,
                                                int causal, __global const TS* d_o,
                                                __global const TS* q, __global const TS* k,
                                                __global const TS* v, __global const TS* o,
                                                __global const float* lse, __global TS* dk,
                                                __global TS* dv) {
  long row = get_global_id(0);  // (b, h, j) flattened
  if (row >= rows) return;
  long j = row % s_len;
  long head_row = row - j;  // row index of (b, h, 0)
  long head = head_row * d;
  long kb = row * d;
  WACC ak[PC_MAX_D], av[PC_MAX_D];
  for (long e = 0; e < d; ++e) ak[e] = av[e] = 0;
  for (long i = causal ? j : 0; i < s_len; ++i) {
    long qb = head + i * d;
    WACC p = exp((WACC)scale * pc_dot(q, qb, k, kb, d) - (WACC)lse[head_row + i]);
    WACC ds = p * (pc_dot(d_o, qb, v, kb, d) - pc_dot(d_o, qb, o, qb, d));
    for (long e = 0; e < d; ++e) {
      av[e] += p * (WACC)LD(d_o, qb + e);
      ak[e] += ds * (WACC)LD(q, qb + e);
    }
  }
  for (long e = 0; e < d; ++e) {
    ST(dk, kb + e, (WACC)scale * ak[e]);
    ST(dv, kb + e, av[e]);
  }
}
