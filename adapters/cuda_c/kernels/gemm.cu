// Tiled gemm on row-major matrices: y = alpha op(a) op(b) + beta c, batched
// over gridDim.z. Each block computes a PC_GEMM_TILE^2 tile of y, staging
// tiles of a and b in shared memory; every output sums over k in order in
// the accumulation type (f32 for f16/bf16, so math modes 0-2 are all met).
// The HIP adapter's gemm, and the CUDA adapter's when cuBLAS is missing.
#include "block_reduce.cuh"

template <typename T>
PC_DEVICE void pc_gemm(const T* a, const T* b, const T* c, T* y, long long batch, long long m,
                       long long n, long long k, int trans_a, int trans_b, double alpha_d,
                       double beta_d) {
  using A = acc_t<T>;
  __shared__ A a_tile[PC_GEMM_TILE][PC_GEMM_TILE + 1];
  __shared__ A b_tile[PC_GEMM_TILE][PC_GEMM_TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long row = static_cast<long long>(blockIdx.y) * PC_GEMM_TILE + ty;
  const long long col = static_cast<long long>(blockIdx.x) * PC_GEMM_TILE + tx;
  const A alpha = static_cast<A>(alpha_d), beta = static_cast<A>(beta_d);
  for (long long bt = blockIdx.z; bt < batch; bt += gridDim.z) {
    const T* ab = a + bt * m * k;
    const T* bb = b + bt * k * n;
    A acc = A(0);
    for (long long k0 = 0; k0 < k; k0 += PC_GEMM_TILE) {
      const long long ak = k0 + tx, bk = k0 + ty;
      a_tile[ty][tx] =
          (row < m && ak < k) ? pc_load(trans_a ? ab + ak * m + row : ab + row * k + ak) : A(0);
      b_tile[ty][tx] =
          (bk < k && col < n) ? pc_load(trans_b ? bb + col * k + bk : bb + bk * n + col) : A(0);
      __syncthreads();
      for (int t = 0; t < PC_GEMM_TILE; ++t) acc += a_tile[ty][t] * b_tile[t][tx];
      __syncthreads();
    }
    if (row < m && col < n) {
      const long long at = bt * m * n + row * n + col;
      A out = alpha * acc;
      if (beta_d != 0.0) out += beta * pc_load(c + at);  // c is not read when beta == 0
      pc_store(y + at, out);
    }
  }
}

#define PC_GEMM_KERNELS(suffix, T)                                                            \
  PC_KERNEL pc_gemm_##suffix(const T* a, const T* b, const T* c, T* y, long long batch,       \
                             long long m, long long n, long long k, int trans_a, int trans_b, \
                             double alpha, double beta) {                                     \
    pc_gemm<T>(a, b, c, y, batch, m, n, k, trans_a, trans_b, alpha, beta);                    \
  }
PC_FOR_EACH_FLOAT(PC_GEMM_KERNELS)
