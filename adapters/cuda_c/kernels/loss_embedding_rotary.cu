// cross_entropy, embedding and rotary embedding kernels. Index inputs are
// i32 or i64 (index_is_64); an index out of range is reported through the
// stream's error word (lowest position wins) and the host returns an error.
#include "block_reduce.cuh"
#include "math.cuh"

template <typename T>
PC_DEVICE void pc_cross_entropy(const T* logits, const void* targets, float* loss, long long rows,
                                long long classes, int index_is_64,
                                unsigned long long* error_word) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* lr = logits + row * classes;
    A m = pc_neg_inf<A>();
    for (long long c = threadIdx.x; c < classes; c += blockDim.x)
      m = pc_max_op()(m, pc_load(lr + c));
    m = pc_block_reduce(m, scratch, pc_max_op());
    A s = A(0);
    for (long long c = threadIdx.x; c < classes; c += blockDim.x) s += pc_exp(pc_load(lr + c) - m);
    s = pc_block_reduce(s, scratch, pc_sum_op());
    if (threadIdx.x == 0) {
      const long long t = pc_load_index(targets, row, index_is_64);
      if (t < 0 || t >= classes) {
        pc_report_bad_index(error_word, row);
        loss[row] = __int_as_float(0x7fc00000);
      } else {
        loss[row] = static_cast<float>(m + pc_log(s) - pc_load(lr + t));
      }
    }
  }
}

template <typename T>
PC_DEVICE void pc_cross_entropy_backward(const T* logits, const void* targets, const float* dloss,
                                         T* dlogits, long long rows, long long classes,
                                         int index_is_64, unsigned long long* error_word) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* lr = logits + row * classes;
    const long long t = pc_load_index(targets, row, index_is_64);
    if (threadIdx.x == 0 && (t < 0 || t >= classes)) pc_report_bad_index(error_word, row);
    A m = pc_neg_inf<A>();
    for (long long c = threadIdx.x; c < classes; c += blockDim.x)
      m = pc_max_op()(m, pc_load(lr + c));
    m = pc_block_reduce(m, scratch, pc_max_op());
    A s = A(0);
    for (long long c = threadIdx.x; c < classes; c += blockDim.x) s += pc_exp(pc_load(lr + c) - m);
    s = pc_block_reduce(s, scratch, pc_sum_op());
    const A g = static_cast<A>(dloss[row]);
    for (long long c = threadIdx.x; c < classes; c += blockDim.x) {
      const A p = pc_exp(pc_load(lr + c) - m) / s;
      pc_store(dlogits + row * classes + c, g * (p - (c == t ? A(1) : A(0))));
    }
  }
}

template <typename T>
PC_DEVICE void pc_embedding(const void* ids, const T* weight, T* out, long long rows,
                            long long vocab, long long dim, int index_is_64,
                            unsigned long long* error_word) {
  const long long total = rows * dim;
  for (long long i = pc_global_thread(); i < total; i += pc_grid_threads()) {
    const long long n = i / dim, j = i % dim;
    const long long id = pc_load_index(ids, n, index_is_64);
    if (id < 0 || id >= vocab) {
      if (j == 0) pc_report_bad_index(error_word, n);
      pc_store_from_double(out + i, 0.0);
    } else {
      out[i] = weight[id * dim + j];
    }
  }
}

// dweight = 0, then dweight[ids[n], :] += dout[n, :] in order of n. Each
// thread owns one column j, so the order of additions is fixed;
// `accumulator` ([V, D] in the accumulation type) keeps f16/bf16 sums in f32
// until the single final rounding.
template <typename T>
PC_DEVICE void pc_embedding_backward(const void* ids, const T* dout, T* dweight, long long rows,
                                     long long vocab, long long dim, int index_is_64,
                                     acc_t<T>* accumulator, unsigned long long* error_word) {
  using A = acc_t<T>;
  for (long long j = pc_global_thread(); j < dim; j += pc_grid_threads()) {
    for (long long v = 0; v < vocab; ++v) accumulator[v * dim + j] = A(0);
    for (long long n = 0; n < rows; ++n) {
      const long long id = pc_load_index(ids, n, index_is_64);
      if (id < 0 || id >= vocab) {
        if (j == 0) pc_report_bad_index(error_word, n);
        continue;
      }
      accumulator[id * dim + j] += pc_load(dout + n * dim + j);
    }
    for (long long v = 0; v < vocab; ++v) pc_store(dweight + v * dim + j, accumulator[v * dim + j]);
  }
}

// Rotate-half RoPE on [S, H, D]; cos/sin are f32 [S, D/2].
template <typename T>
PC_DEVICE void pc_rotary(const T* x, const float* cos_table, const float* sin_table, T* y,
                         long long seq, long long heads, long long dim, int inverse) {
  using A = acc_t<T>;
  const long long half = dim / 2;
  const long long total = seq * heads * half;
  for (long long i = pc_global_thread(); i < total; i += pc_grid_threads()) {
    const long long k = i % half;
    const long long sh = i / half;  // s * heads + h
    const long long s = sh / heads;
    const A c = static_cast<A>(cos_table[s * half + k]);
    const A sn = static_cast<A>(sin_table[s * half + k]) * (inverse ? A(-1) : A(1));
    const T* xr = x + sh * dim;
    const A x1 = pc_load(xr + k), x2 = pc_load(xr + k + half);
    pc_store(y + sh * dim + k, x1 * c - x2 * sn);
    pc_store(y + sh * dim + k + half, x2 * c + x1 * sn);
  }
}

#define PC_LOSS_KERNELS(suffix, T)                                                                \
  PC_KERNEL pc_cross_entropy_##suffix(const T* logits, const void* targets, float* loss,          \
                                      long long rows, long long classes, int index_is_64,         \
                                      unsigned long long* error_word) {                           \
    pc_cross_entropy<T>(logits, targets, loss, rows, classes, index_is_64, error_word);           \
  }                                                                                               \
  PC_KERNEL pc_cross_entropy_backward_##suffix(                                                   \
      const T* logits, const void* targets, const float* dloss, T* dlogits, long long rows,       \
      long long classes, int index_is_64, unsigned long long* error_word) {                       \
    pc_cross_entropy_backward<T>(logits, targets, dloss, dlogits, rows, classes, index_is_64,     \
                                 error_word);                                                     \
  }                                                                                               \
  PC_KERNEL pc_embedding_##suffix(const void* ids, const T* weight, T* out, long long rows,       \
                                  long long vocab, long long dim, int index_is_64,                \
                                  unsigned long long* error_word) {                               \
    pc_embedding<T>(ids, weight, out, rows, vocab, dim, index_is_64, error_word);                 \
  }                                                                                               \
  PC_KERNEL pc_embedding_backward_##suffix(                                                       \
      const void* ids, const T* dout, T* dweight, long long rows, long long vocab, long long dim, \
      int index_is_64, acc_t<T>* accumulator, unsigned long long* error_word) {                   \
    pc_embedding_backward<T>(ids, dout, dweight, rows, vocab, dim, index_is_64, accumulator,      \
                             error_word);                                                         \
  }                                                                                               \
  PC_KERNEL pc_rotary_##suffix(const T* x, const float* cos_table, const float* sin_table, T* y,  \
                               long long seq, long long heads, long long dim, int inverse) {      \
    pc_rotary<T>(x, cos_table, sin_table, y, seq, heads, dim, inverse);                           \
  }
PC_FOR_EACH_FLOAT(PC_LOSS_KERNELS)
