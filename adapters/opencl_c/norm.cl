// layernorm and rmsnorm over contiguous [N, D]: statistics per row (one
// work-item per row), parameter gradients per column (one work-item per
// column, summing rows in order, so results are deterministic).

__kernel void pc_layernorm_kernel(long n, long d, ACC eps, __global const TS* x,
                                  __global const TS* gamma, __global const TS* beta, __global TS* y,
                                  __global float* mean_out, __global float* rstd_out) {
  long r = get_global_id(0);
  if (r >= n) return;
  long base = r * d;
  WACC s = 0;
  for (long j = 0; j < d; ++j) s += (WACC)LD(x, base + j);
  WACC mean = s / (WACC)d;
  WACC v = 0;
  for (long j = 0; j < d; ++j) {
    WACC c = (WACC)LD(x, base + j) - mean;
    v += c * c;
  }
  WACC rstd = (WACC)1 / sqrt(v / (WACC)d + (WACC)eps);
  for (long j = 0; j < d; ++j) {
    WACC xh = ((WACC)LD(x, base + j) - mean) * rstd;
    ST(y, base + j, xh * (WACC)LD(gamma, j) + (WACC)LD(beta, j));
  }
  mean_out[r] = (float)mean;
  rstd_out[r] = (float)rstd;
}

// dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma.
__kernel void pc_layernorm_backward_dx_kernel(long n, long d, __global const TS* dy,
                                              __global const TS* x, __global const TS* gamma,
                                              __global const float* mean,
                                              __global const float* rstd, __global TS* dx) {
  long r = get_global_id(0);
  if (r >= n) return;
  long base = r * d;
  WACC mu = (WACC)mean[r], rs = (WACC)rstd[r];
  WACC sg = 0, sgx = 0;
  for (long j = 0; j < d; ++j) {
    WACC g = (WACC)LD(dy, base + j) * (WACC)LD(gamma, j);
    WACC xh = ((WACC)LD(x, base + j) - mu) * rs;
    sg += g;
    sgx += g * xh;
  }
  sg /= (WACC)d;
  sgx /= (WACC)d;
  for (long j = 0; j < d; ++j) {
    WACC g = (WACC)LD(dy, base + j) * (WACC)LD(gamma, j);
    WACC xh = ((WACC)LD(x, base + j) - mu) * rs;
    ST(dx, base + j, rs * (g - sg - xh * sgx));
  }
}

__kernel void pc_layernorm_backward_params_kernel(long n, long d, __global const TS* dy,
                                                  __global const TS* x, __global const float* mean,
                                                  __global const float* rstd, __global TS* dgamma,
                                                  __global TS* dbeta) {
  long j = get_global_id(0);
  if (j >= d) return;
  WACC sgm = 0, sb = 0;
  for (long r = 0; r < n; ++r) {
    WACC g = (WACC)LD(dy, r * d + j);
    WACC xh = ((WACC)LD(x, r * d + j) - (WACC)mean[r]) * (WACC)rstd[r];
    sgm += g * xh;
    sb += g;
  }
  ST(dgamma, j, sgm);
  ST(dbeta, j, sb);
}

__kernel void pc_rmsnorm_kernel(long n, long d, ACC eps, __global const TS* x,
                                __global const TS* gamma, __global TS* y,
                                __global float* rstd_out) {
  long r = get_global_id(0);
  if (r >= n) return;
  long base = r * d;
  WACC s = 0;
  for (long j = 0; j < d; ++j) {
    WACC v = (WACC)LD(x, base + j);
    s += v * v;
  }
  WACC rstd = (WACC)1 / sqrt(s / (WACC)d + (WACC)eps);
  for (long j = 0; j < d; ++j) ST(y, base + j, (WACC)LD(x, base + j) * rstd * (WACC)LD(gamma, j));
  rstd_out[r] = (float)rstd;
}

// dx = rstd (g - x rstd^2 mean(g x)), g = dy gamma.
__kernel void pc_rmsnorm_backward_dx_kernel(long n, long d, __global const TS* dy,
                                            __global const TS* x, __global const TS* gamma,
                                            __global const float* rstd, __global TS* dx) {
  long r = get_global_id(0);
  if (r >= n) return;
  long base = r * d;
  WACC rs = (WACC)rstd[r];
  WACC sgx = 0;
  for (long j = 0; j < d; ++j)
    sgx += (WACC)LD(dy, base + j) * (WACC)LD(gamma, j) * (WACC)LD(x, base + j);
  sgx /= (WACC)d;
  for (long j = 0; j < d; ++j) {
    WACC g = (WACC)LD(dy, base + j) * (WACC)LD(gamma, j);
    ST(dx, base + j, rs * (g - (WACC)LD(x, base + j) * rs * rs * sgx));
  }
}

__kernel void pc_rmsnorm_backward_dgamma_kernel(long n, long d, __global const TS* dy,
                                                __global const TS* x, __global const float* rstd,
                                                __global TS* dgamma) {
  long j = get_global_id(0);
  if (j >= d) return;
  WACC s = 0;
  for (long r = 0; r < n; ++r)
    s += (WACC)LD(dy, r * d + j) * (WACC)LD(x, r * d + j) * (WACC)rstd[r];
  ST(dgamma, j, s);
}
