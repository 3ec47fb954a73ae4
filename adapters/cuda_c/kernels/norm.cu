// layernorm and rmsnorm, forward and backward, on dense [N, D] rows.
// Forward and dx: one block per row. dgamma/dbeta: one block per column,
// summing over rows in a fixed order (deterministic, no atomics).
#include "block_reduce.cuh"
#include "math.cuh"

template <typename T>
PC_DEVICE void pc_norm_forward(const T* x, const T* gamma, const T* beta, T* y, float* mean_out,
                               float* rstd_out, long long rows, long long d, double eps,
                               int is_rms) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * d;
    A mean = A(0);
    if (!is_rms) {
      A s = A(0);
      for (long long j = threadIdx.x; j < d; j += blockDim.x) s += pc_load(xr + j);
      mean = pc_block_reduce(s, scratch, pc_sum_op()) / static_cast<A>(d);
    }
    A sq = A(0);
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
      const A c = pc_load(xr + j) - mean;
      sq += c * c;
    }
    const A var = pc_block_reduce(sq, scratch, pc_sum_op()) / static_cast<A>(d);
    const A rstd = A(1) / pc_sqrt(var + static_cast<A>(eps));
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
      A v = (pc_load(xr + j) - mean) * rstd * pc_load(gamma + j);
      if (!is_rms) v += pc_load(beta + j);
      pc_store(y + row * d + j, v);
    }
    if (threadIdx.x == 0) {
      if (!is_rms) mean_out[row] = static_cast<float>(mean);
      rstd_out[row] = static_cast<float>(rstd);
    }
  }
}

template <typename T>
PC_DEVICE void pc_norm_backward_dx(const T* dy, const T* x, const T* gamma, const float* mean_in,
                                   const float* rstd_in, T* dx, long long rows, long long d,
                                   int is_rms) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const A mean = is_rms ? A(0) : static_cast<A>(mean_in[row]);
    const A rstd = static_cast<A>(rstd_in[row]);
    const T* xr = x + row * d;
    const T* dyr = dy + row * d;
    A sum_g = A(0), sum_gx = A(0);
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
      const A g = pc_load(dyr + j) * pc_load(gamma + j);
      sum_g += g;
      sum_gx += g * (pc_load(xr + j) - mean) * rstd;
    }
    const A mean_g = is_rms ? A(0) : pc_block_reduce(sum_g, scratch, pc_sum_op()) / A(d);
    const A mean_gx = pc_block_reduce(sum_gx, scratch, pc_sum_op()) / static_cast<A>(d);
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
      const A g = pc_load(dyr + j) * pc_load(gamma + j);
      const A xhat = (pc_load(xr + j) - mean) * rstd;
      pc_store(dx + row * d + j, rstd * (g - mean_g - xhat * mean_gx));
    }
  }
}

// dgamma[j] = sum_n dy[n, j] * xhat[n, j]; dbeta[j] = sum_n dy[n, j] (layernorm only).
template <typename T>
PC_DEVICE void pc_norm_backward_params(const T* dy, const T* x, const float* mean_in,
                                       const float* rstd_in, T* dgamma, T* dbeta, long long rows,
                                       long long d, int is_rms) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  for (long long j = blockIdx.x; j < d; j += gridDim.x) {
    A sg = A(0), sb = A(0);
    for (long long n = threadIdx.x; n < rows; n += blockDim.x) {
      const A g = pc_load(dy + n * d + j);
      const A mean = is_rms ? A(0) : static_cast<A>(mean_in[n]);
      sg += g * (pc_load(x + n * d + j) - mean) * static_cast<A>(rstd_in[n]);
      sb += g;
    }
    sg = pc_block_reduce(sg, scratch, pc_sum_op());
    if (!is_rms) sb = pc_block_reduce(sb, scratch, pc_sum_op());
    if (threadIdx.x == 0) {
      pc_store(dgamma + j, sg);
      if (!is_rms) pc_store(dbeta + j, sb);
    }
  }
}

#define PC_NORM_KERNELS(suffix, T)                                                                 \
  PC_KERNEL pc_norm_forward_##suffix(const T* x, const T* gamma, const T* beta, T* y, float* mean, \
                                     float* rstd, long long rows, long long d, double eps,         \
                                     int is_rms) {                                                 \
    pc_norm_forward<T>(x, gamma, beta, y, mean, rstd, rows, d, eps, is_rms);                       \
  }                                                                                                \
  PC_KERNEL pc_norm_backward_dx_##suffix(const T* dy, const T* x, const T* gamma,                  \
                                         const float* mean, const float* rstd, T* dx,              \
                                         long long rows, long long d, int is_rms) {                \
    pc_norm_backward_dx<T>(dy, x, gamma, mean, rstd, dx, rows, d, is_rms);                         \
  }                                                                                                \
  PC_KERNEL pc_norm_backward_params_##suffix(const T* dy, const T* x, const float* mean,           \
                                             const float* rstd, T* dgamma, T* dbeta,               \
                                             long long rows, long long d, int is_rms) {            \
    pc_norm_backward_params<T>(dy, x, mean, rstd, dgamma, dbeta, rows, d, is_rms);                 \
  }
PC_FOR_EACH_FLOAT(PC_NORM_KERNELS)
