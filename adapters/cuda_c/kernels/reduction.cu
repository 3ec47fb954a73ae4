// Reductions along one axis of a strided view, and the softmax family along
// one axis of a dense view. One block per output row; threads stride over
// the axis and combine in a fixed tree order.
#include "block_reduce.cuh"
#include "math.cuh"

// Offset of the first x element of output row `row` (a linear index over
// y's shape, whose `axis` extent is 1), and of the y element itself.
PC_DEVICE void pc_row_offsets(const pc_tensor_desc& x, const pc_tensor_desc& y, long long row,
                              long long* x_off, long long* y_off) {
  long long xo = 0, yo = 0;
  for (int k = y.rank - 1; k >= 0; --k) {
    const long long extent = y.shape[k];
    const long long c = extent ? row % extent : 0;
    row = extent ? row / extent : 0;
    xo += c * x.strides[k];
    yo += c * y.strides[k];
  }
  *x_off = xo;
  *y_off = yo;
}

template <typename T>
PC_DEVICE void pc_reduce(const pc_tensor_desc& x, const pc_tensor_desc& y, long long rows, int axis,
                         int op) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  const long long len = x.shape[axis];
  const long long step = x.strides[axis];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    long long xo, yo;
    pc_row_offsets(x, y, row, &xo, &yo);
    const T* xp = pc_ptr<const T>(x) + xo;
    A result;
    if (op == PC_REDUCE_MAX) {
      A m = pc_neg_inf<A>();
      for (long long l = threadIdx.x; l < len; l += blockDim.x)
        m = pc_max_op()(m, pc_load(xp + l * step));
      result = pc_block_reduce(m, scratch, pc_max_op());
    } else {
      A s = A(0);
      for (long long l = threadIdx.x; l < len; l += blockDim.x) {
        const A v = pc_load(xp + l * step);
        s += op == PC_REDUCE_L2_NORM ? v * v : v;
      }
      result = pc_block_reduce(s, scratch, pc_sum_op());
      if (op == PC_REDUCE_MEAN) result = result / static_cast<A>(len);
      if (op == PC_REDUCE_L2_NORM) result = pc_sqrt(result);
    }
    if (threadIdx.x == 0) pc_store(pc_ptr<T>(y) + yo, result);
  }
}

// First maximum wins; NaN counts as the maximum (the first NaN wins).
template <typename A>
PC_DEVICE bool pc_argmax_better(A v, long long i, A best, long long best_i) {
  const bool v_nan = v != v, best_nan = best != best;
  if (best_i < 0) return true;
  if (v_nan != best_nan) return v_nan;
  if (v_nan || v == best) return i < best_i;
  return v > best;
}

template <typename T>
PC_DEVICE void pc_argmax(const pc_tensor_desc& x, const pc_tensor_desc& y, long long rows, int axis,
                         int index_is_64) {
  using A = acc_t<T>;
  __shared__ A values[PC_BLOCK_THREADS];
  __shared__ long long indices[PC_BLOCK_THREADS];
  const long long len = x.shape[axis];
  const long long step = x.strides[axis];
  const unsigned t = threadIdx.x;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    long long xo, yo;
    pc_row_offsets(x, y, row, &xo, &yo);
    const T* xp = pc_ptr<const T>(x) + xo;
    A best = A(0);
    long long best_i = -1;
    for (long long l = t; l < len; l += blockDim.x) {
      const A v = pc_load(xp + l * step);
      if (pc_argmax_better(v, l, best, best_i)) best = v, best_i = l;
    }
    values[t] = best;
    indices[t] = best_i;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s && indices[t + s] >= 0 &&
          pc_argmax_better(values[t + s], indices[t + s], values[t], indices[t])) {
        values[t] = values[t + s];
        indices[t] = indices[t + s];
      }
      __syncthreads();
    }
    if (t == 0) {
      if (index_is_64)
        reinterpret_cast<long long*>(y.address)[yo] = indices[0];
      else
        reinterpret_cast<int*>(y.address)[yo] = static_cast<int>(indices[0]);
    }
    __syncthreads();
  }
}

// Dense [outer, len, inner] layout: row r = (o, i) covers o*len*inner + l*inner + i.
PC_DEVICE long long pc_softmax_base(long long row, long long len, long long inner) {
  return (row / inner) * len * inner + row % inner;
}

template <typename T>
PC_DEVICE void pc_softmax(const T* x, T* y, long long rows, long long len, long long inner,
                          int op) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const long long base = pc_softmax_base(row, len, inner);
    A m = pc_neg_inf<A>();
    for (long long l = threadIdx.x; l < len; l += blockDim.x)
      m = pc_max_op()(m, pc_load(x + base + l * inner));
    m = pc_block_reduce(m, scratch, pc_max_op());
    A s = A(0);
    for (long long l = threadIdx.x; l < len; l += blockDim.x)
      s += pc_exp(pc_load(x + base + l * inner) - m);
    s = pc_block_reduce(s, scratch, pc_sum_op());
    const A log_s = pc_log(s);
    for (long long l = threadIdx.x; l < len; l += blockDim.x) {
      const A v = pc_load(x + base + l * inner) - m;
      pc_store(y + base + l * inner, op == PC_LOG_SOFTMAX ? v - log_s : pc_exp(v) / s);
    }
  }
}

template <typename T>
PC_DEVICE void pc_softmax_backward(const T* dy, const T* y, T* dx, long long rows, long long len,
                                   long long inner, int op) {
  using A = acc_t<T>;
  __shared__ A scratch[PC_BLOCK_THREADS];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const long long base = pc_softmax_base(row, len, inner);
    A s = A(0);
    for (long long l = threadIdx.x; l < len; l += blockDim.x) {
      const long long k = base + l * inner;
      s += op == PC_LOG_SOFTMAX ? pc_load(dy + k) : pc_load(dy + k) * pc_load(y + k);
    }
    s = pc_block_reduce(s, scratch, pc_sum_op());
    for (long long l = threadIdx.x; l < len; l += blockDim.x) {
      const long long k = base + l * inner;
      const A g = pc_load(dy + k), v = pc_load(y + k);
      pc_store(dx + k, op == PC_LOG_SOFTMAX ? g - pc_exp(v) * s : v * (g - s));
    }
  }
}

#define PC_REDUCTION_KERNELS(suffix, T)                                                           \
  PC_KERNEL pc_reduce_##suffix(pc_tensor_desc x, pc_tensor_desc y, long long rows, int axis,      \
                               int op) {                                                          \
    pc_reduce<T>(x, y, rows, axis, op);                                                           \
  }                                                                                               \
  PC_KERNEL pc_argmax_##suffix(pc_tensor_desc x, pc_tensor_desc y, long long rows, int axis,      \
                               int index_is_64) {                                                 \
    pc_argmax<T>(x, y, rows, axis, index_is_64);                                                  \
  }                                                                                               \
  PC_KERNEL pc_softmax_##suffix(const T* x, T* y, long long rows, long long len, long long inner, \
                                int op) {                                                         \
    pc_softmax<T>(x, y, rows, len, inner, op);                                                    \
  }                                                                                               \
  PC_KERNEL pc_softmax_backward_##suffix(const T* dy, const T* y, T* dx, long long rows,          \
                                         long long len, long long inner, int op) {                \
    pc_softmax_backward<T>(dy, y, dx, rows, len, inner, op);                                      \
  }
PC_FOR_EACH_FLOAT(PC_REDUCTION_KERNELS)
