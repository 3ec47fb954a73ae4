// Scaled dot-product attention on dense [B*H, S, D] (optionally causal).
// Forward: one block per query row; the row's scores live in dynamic shared
// memory (S values of the accumulation type), so S is bounded by the
// device's shared memory (the host checks; see launch_geometry).
// Backward: one kernel per query row computes dq and delta = sum(do * o),
// a second per key row computes dk and dv; no atomics, fixed order.
#include "block_reduce.cuh"
#include "math.cuh"

PC_EXTERN_SHARED(pc_attention_smem);

template <typename T>
PC_DEVICE acc_t<T> pc_dot(const T* a, const T* b, long long dim) {
  acc_t<T> s = 0;
  for (long long d = 0; d < dim; ++d) s += pc_load(a + d) * pc_load(b + d);
  return s;
}

template <typename T>
PC_DEVICE void pc_attention(const T* q, const T* k, const T* v, T* o, float* lse, long long heads,
                            long long seq, long long dim, double scale_d, int causal) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  A* scores = reinterpret_cast<A*>(pc_attention_smem);
  const A scale = static_cast<A>(scale_d);
  for (long long row = blockIdx.x; row < heads * seq; row += gridDim.x) {
    const long long bh = row / seq, i = row % seq;
    const T* qi = q + row * dim;
    const T* kb = k + bh * seq * dim;
    const T* vb = v + bh * seq * dim;
    const long long len = causal ? i + 1 : seq;
    A m = pc_neg_inf<A>();
    for (long long j = threadIdx.x; j < len; j += blockDim.x) {
      const A s = scale * pc_dot(qi, kb + j * dim, dim);
      scores[j] = s;
      m = pc_max_op()(m, s);
    }
    m = pc_block_reduce(m, scratch, pc_max_op());
    A sum = A(0);
    for (long long j = threadIdx.x; j < len; j += blockDim.x) {
      const A p = pc_exp(scores[j] - m);
      scores[j] = p;
      sum += p;
    }
    sum = pc_block_reduce(sum, scratch, pc_sum_op());  // also publishes scores[]
    for (long long d = threadIdx.x; d < dim; d += blockDim.x) {
      A acc = A(0);
      for (long long j = 0; j < len; ++j) acc += scores[j] * pc_load(vb + j * dim + d);
      pc_store(o + row * dim + d, acc / sum);
    }
    if (threadIdx.x == 0) lse[row] = static_cast<float>(m + pc_log(sum));
    __syncthreads();
  }
}

template <typename T>
PC_DEVICE void pc_attention_backward_dq(const T* dout, const T* q, const T* k, const T* v,
                                        const T* o, const float* lse, T* dq, acc_t<T>* delta,
                                        long long heads, long long seq, long long dim,
                                        double scale_d, int causal) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  A* ds = reinterpret_cast<A*>(pc_attention_smem);
  const A scale = static_cast<A>(scale_d);
  for (long long row = blockIdx.x; row < heads * seq; row += gridDim.x) {
    const long long bh = row / seq, i = row % seq;
    const T* qi = q + row * dim;
    const T* doi = dout + row * dim;
    const T* kb = k + bh * seq * dim;
    const T* vb = v + bh * seq * dim;
    const long long len = causal ? i + 1 : seq;
    A part = A(0);
    for (long long d = threadIdx.x; d < dim; d += blockDim.x)
      part += pc_load(doi + d) * pc_load(o + row * dim + d);
    const A delta_i = pc_block_reduce(part, scratch, pc_sum_op());
    const A lse_i = static_cast<A>(lse[row]);
    for (long long j = threadIdx.x; j < len; j += blockDim.x) {
      const A p = pc_exp(scale * pc_dot(qi, kb + j * dim, dim) - lse_i);
      ds[j] = p * (pc_dot(doi, vb + j * dim, dim) - delta_i);
    }
    __syncthreads();
    for (long long d = threadIdx.x; d < dim; d += blockDim.x) {
      A acc = A(0);
      for (long long j = 0; j < len; ++j) acc += ds[j] * pc_load(kb + j * dim + d);
      pc_store(dq + row * dim + d, scale * acc);
    }
    if (threadIdx.x == 0) delta[row] = delta_i;
    __syncthreads();
  }
}

template <typename T>
PC_DEVICE void pc_attention_backward_dkdv(const T* dout, const T* q, const T* k, const T* v,
                                          const float* lse, const acc_t<T>* delta, T* dk, T* dv,
                                          long long heads, long long seq, long long dim,
                                          double scale_d, int causal) {
  using A = acc_t<T>;
  A* p = reinterpret_cast<A*>(pc_attention_smem);
  A* ds = p + seq;
  const A scale = static_cast<A>(scale_d);
  for (long long row = blockIdx.x; row < heads * seq; row += gridDim.x) {
    const long long bh = row / seq, j = row % seq;
    const T* kj = k + row * dim;
    const T* vj = v + row * dim;
    const T* qb = q + bh * seq * dim;
    const T* dob = dout + bh * seq * dim;
    const long long first = causal ? j : 0;
    for (long long i = first + threadIdx.x; i < seq; i += blockDim.x) {
      const long long qi = bh * seq + i;
      const A pij = pc_exp(scale * pc_dot(qb + i * dim, kj, dim) - static_cast<A>(lse[qi]));
      p[i] = pij;
      ds[i] = pij * (pc_dot(dob + i * dim, vj, dim) - delta[qi]);
    }
    __syncthreads();
    for (long long d = threadIdx.x; d < dim; d += blockDim.x) {
      A acc_v = A(0), acc_k = A(0);
      for (long long i = first; i < seq; ++i) {
        acc_v += p[i] * pc_load(dob + i * dim + d);
        acc_k += ds[i] * pc_load(qb + i * dim + d);
      }
      pc_store(dv + row * dim + d, acc_v);
      pc_store(dk + row * dim + d, scale * acc_k);
    }
    __syncthreads();
  }
}

#define PC_ATTENTION_KERNELS(suffix, T)                                                            \
  PC_KERNEL pc_attention_##suffix(const T* q, const T* k, const T* v, T* o, float* lse,            \
                                  long long heads, long long seq, long long dim, double scale,     \
                                  int causal) {                                                    \
    pc_attention<T>(q, k, v, o, lse, heads, seq, dim, scale, causal);                              \
  }                                                                                                \
  PC_KERNEL pc_attention_backward_dq_##suffix(                                                     \
      const T* dout, const T* q, const T* k, const T* v, const T* o, const float* lse, T* dq,      \
      acc_t<T>* delta, long long heads, long long seq, long long dim, double scale, int causal) {  \
    pc_attention_backward_dq<T>(dout, q, k, v, o, lse, dq, delta, heads, seq, dim, scale, causal); \
  }                                                                                                \
  PC_KERNEL pc_attention_backward_dkdv_##suffix(                                                   \
      const T* dout, const T* q, const T* k, const T* v, const float* lse, const acc_t<T>* delta,  \
      T* dk, T* dv, long long heads, long long seq, long long dim, double scale, int causal) {     \
    pc_attention_backward_dkdv<T>(dout, q, k, v, lse, delta, dk, dv, heads, seq, dim, scale,       \
                                  causal);                                                         \
  }
PC_FOR_EACH_FLOAT(PC_ATTENTION_KERNELS)
