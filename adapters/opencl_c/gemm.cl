// GEMM: y = alpha op(a) op(b) + beta c over contiguous row-major [B?, M, N].
// Element offsets a_off..y_off locate [0, 0, 0] of each tensor. c is not
// read when beta == 0. Products accumulate in ACC (f32 for f16/bf16), and
// each output is rounded once.

#define PC_A_AT(base, row, col) \
  (trans_a ? LD(a, (base) + (col)*m + (row)) : LD(a, (base) + (row)*k + (col)))
#define PC_B_AT(base, row, col) \
  (trans_b ? LD(b, (base) + (col)*k + (row)) : LD(b, (base) + (row)*n + (col)))

inline void pc_gemm_store(__global const TS* c, __global TS* y, long idx_c, long idx_y, ACC acc,
                          ACC alpha, ACC beta) {
  ACC r = alpha * acc;
  if (beta != (ACC)0) r += beta * (ACC)LD(c, idx_c);
  ST(y, idx_y, r);
}

// The reference kernel: one work-item per output, a full dot product each.
// Kept for the benchmark comparison against the tiled kernel.
__kernel void pc_gemm_naive(long m, long n, long k, int trans_a, int trans_b, ACC alpha, ACC beta,
                            __global const TS* a, long a_off, __global const TS* b, long b_off,
                            __global const TS* c, long c_off, __global TS* y, long y_off) {
  long col = get_global_id(0), row = get_global_id(1), batch = get_global_id(2);
  if (col >= n || row >= m) return;
  long ab = a_off + batch * m * k, bb = b_off + batch * k * n;
  ACC acc = 0;
  for (long p = 0; p < k; ++p) acc += (ACC)PC_A_AT(ab, row, p) * (ACC)PC_B_AT(bb, p, col);
  long o = batch * m * n + row * n + col;
  pc_gemm_store(c, y, c_off + o, y_off + o, acc, alpha, beta);
}

// Tiled kernel: an 8x8 work-group computes a 64x64 block of y, each
// work-item an 8x8 register block (rows ly + 8 i, columns 8 lx + j, held
// as 8-wide vectors so CPU implementations use SIMD within a work-item). Tiles
// of a (64 x 16) and b (16 x 64) are staged in local memory; out-of-range
// elements load as zero so any M, N, K works. (On PoCL, 8x8 groups with
// 8x8 blocks measured faster than 16x16 groups with 4x4 blocks, and much
// faster than one output per work-item: few work-items, much work each.)
#if PC_DTYPE == 1
typedef double8 PC_ACC8;
#else
typedef float8 PC_ACC8;
#endif
#define PC_TILE 64
#define PC_TK 16
#define PC_WG 8
#define PC_RB 8

__kernel __attribute__((reqd_work_group_size(PC_WG, PC_WG, 1))) void pc_gemm_tiled(
    long m, long n, long k, int trans_a, int trans_b, ACC alpha, ACC beta, __global const TS* a,
    long a_off, __global const TS* b, long b_off, __global const TS* c, long c_off, __global TS* y,
    long y_off) {
  __local ACC as[PC_TK][PC_TILE];
  __local ACC bs[PC_TK][PC_TILE];
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int t = ly * PC_WG + lx;
  const long batch = get_global_id(2);
  const long row0 = get_group_id(1) * PC_TILE, col0 = get_group_id(0) * PC_TILE;
  const long ab = a_off + batch * m * k, bb = b_off + batch * k * n;
  PC_ACC8 acc[PC_RB];
  for (int i = 0; i < PC_RB; ++i) acc[i] = (PC_ACC8)(0);

  for (long k0 = 0; k0 < k; k0 += PC_TK) {
    for (int e = 0; e < (PC_TILE * PC_TK) / (PC_WG * PC_WG); ++e) {
      int idx = t + e * PC_WG * PC_WG;
      int mm = idx % PC_TILE, kk = idx / PC_TILE;
      long gr = row0 + mm, gk = k0 + kk;
      as[kk][mm] = (gr < m && gk < k) ? (ACC)PC_A_AT(ab, gr, gk) : (ACC)0;
      long gc = col0 + mm;
      bs[kk][mm] = (gk < k && gc < n) ? (ACC)PC_B_AT(bb, gk, gc) : (ACC)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // Each work-item owns rows ly + 8 i and the 8 adjacent columns
    // lx * 8 .. lx * 8 + 7, so b's row is one 8-wide vector load.
    for (int kk = 0; kk < PC_TK; ++kk) {
      PC_ACC8 bv = vload8(lx, &bs[kk][0]);
      for (int i = 0; i < PC_RB; ++i) acc[i] += as[kk][ly + PC_WG * i] * bv;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < PC_RB; ++i) {
    long row = row0 + ly + PC_WG * i;
    if (row >= m) continue;
    ACC out[PC_RB];
    vstore8(acc[i], 0, out);
    for (int j = 0; j < PC_RB; ++j) {
      long col = col0 + lx * PC_RB + j;
      if (col >= n) continue;
      long o = batch * m * n + row * n + col;
      pc_gemm_store(c, y, c_off + o, y_off + o, out[j], alpha, beta);
    }
  }
}
