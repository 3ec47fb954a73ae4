// Elementwise kernels: unary, unary backward, binary, fill, cast, adamw.
// Each thread handles elements i, i + grid, ...; index math is skipped when
// every view is dense.
#include "block_reduce.cuh"
#include "math.cuh"

template <typename A>
PC_DEVICE A pc_apply_unary(int op, A x, int approximate) {
  switch (op) {
    case PC_UNARY_NEG:
      return -x;
    case PC_UNARY_EXP:
      return pc_exp(x);
    case PC_UNARY_LOG:
      return pc_log(x);
    case PC_UNARY_SQRT:
      return pc_sqrt(x);
    case PC_UNARY_RSQRT:
      return A(1) / pc_sqrt(x);
    case PC_UNARY_TANH:
      return pc_tanh(x);
    case PC_UNARY_SIGMOID:
      return pc_sigmoid(x);
    case PC_UNARY_RELU:
      return x > A(0) ? x : (x != x ? x : A(0));
    case PC_UNARY_GELU:
      return pc_gelu(x, approximate);
    case PC_UNARY_SILU:
      return pc_silu(x);
    default:
      return x;
  }
}

template <typename A>
PC_DEVICE A pc_apply_backward(int op, A dy, A x, int approximate) {
  switch (op) {
    case PC_BACKWARD_RELU:  // a select, as torch does: dy = Inf/NaN where x <= 0 gives 0
      return x > A(0) ? dy : A(0);
    case PC_BACKWARD_GELU:
      return dy * pc_gelu_derivative(x, approximate);
    case PC_BACKWARD_SILU:
      return dy * pc_silu_derivative(x);
    case PC_BACKWARD_SIGMOID:  // s(x) (1 - s(x)) = s(x) s(-x), no cancellation
      return dy * (pc_sigmoid(x) * pc_sigmoid(-x));
    case PC_BACKWARD_TANH: {
      const A t = pc_tanh(x);
      return dy * (A(1) - t * t);
    }
    default:
      return dy;
  }
}

template <typename A>
PC_DEVICE A pc_apply_binary(int op, A a, A b) {
  switch (op) {
    case PC_BINARY_ADD:
      return a + b;
    case PC_BINARY_SUB:
      return a - b;
    case PC_BINARY_MUL:
      return a * b;
    default:
      return a / b;
  }
}

template <typename T>
PC_DEVICE void pc_unary(const pc_tensor_desc& x, const pc_tensor_desc& y, long long n, int op,
                        int approximate) {
  const T* xp = pc_ptr<const T>(x);
  T* yp = pc_ptr<T>(y);
  for (long long i = pc_global_thread(); i < n; i += pc_grid_threads()) {
    const T* src = xp + pc_offset(x, i);
    T* dst = yp + pc_offset(y, i);
    if (op == PC_UNARY_COPY)
      *dst = *src;  // bit copy: NaN payloads survive
    else
      pc_store(dst, pc_apply_unary(op, pc_load(src), approximate));
  }
}

template <typename T>
PC_DEVICE void pc_unary_backward(const pc_tensor_desc& dy, const pc_tensor_desc& x,
                                 const pc_tensor_desc& dx, long long n, int op, int approximate) {
  for (long long i = pc_global_thread(); i < n; i += pc_grid_threads()) {
    const auto g = pc_load(pc_ptr<const T>(dy) + pc_offset(dy, i));
    const auto v = pc_load(pc_ptr<const T>(x) + pc_offset(x, i));
    pc_store(pc_ptr<T>(dx) + pc_offset(dx, i), pc_apply_backward(op, g, v, approximate));
  }
}

template <typename T>
PC_DEVICE void pc_binary(const pc_tensor_desc& a, const pc_tensor_desc& b,
                         const pc_tensor_desc& out, long long n, int op) {
  for (long long i = pc_global_thread(); i < n; i += pc_grid_threads()) {
    const auto va = pc_load(pc_ptr<const T>(a) + pc_offset(a, i));
    const auto vb = pc_load(pc_ptr<const T>(b) + pc_offset(b, i));
    pc_store(pc_ptr<T>(out) + pc_offset(out, i), pc_apply_binary(op, va, vb));
  }
}

template <typename T>
PC_DEVICE void pc_fill(const pc_tensor_desc& out, long long n, double value) {
  for (long long i = pc_global_thread(); i < n; i += pc_grid_threads())
    pc_store_from_double(pc_ptr<T>(out) + pc_offset(out, i), value);
}

// adamw in f32; only the gradient has the op's dtype T.
template <typename T>
PC_DEVICE void pc_adamw(const float* param, const T* grad, const float* m, const float* v,
                        float* param_out, float* m_out, float* v_out, long long n, float lr,
                        float beta1, float beta2, float eps, float weight_decay,
                        float bias_correction1, float bias_correction2) {
  for (long long i = pc_global_thread(); i < n; i += pc_grid_threads()) {
    const float g = static_cast<float>(pc_load(grad + i));
    const float m1 = beta1 * m[i] + (1.0f - beta1) * g;
    const float v1 = beta2 * v[i] + (1.0f - beta2) * g * g;
    const float p = param[i];
    const float m_hat = m1 / bias_correction1;
    const float v_hat = v1 / bias_correction2;
    param_out[i] = p - lr * (weight_decay * p + m_hat / (sqrtf(v_hat) + eps));
    m_out[i] = m1;
    v_out[i] = v1;
  }
}

#define PC_ELEMENTWISE_KERNELS(suffix, T)                                                          \
  PC_KERNEL pc_unary_##suffix(pc_tensor_desc x, pc_tensor_desc y, long long n, int op,             \
                              int approximate) {                                                   \
    pc_unary<T>(x, y, n, op, approximate);                                                         \
  }                                                                                                \
  PC_KERNEL pc_unary_backward_##suffix(pc_tensor_desc dy, pc_tensor_desc x, pc_tensor_desc dx,     \
                                       long long n, int op, int approximate) {                     \
    pc_unary_backward<T>(dy, x, dx, n, op, approximate);                                           \
  }                                                                                                \
  PC_KERNEL pc_binary_##suffix(pc_tensor_desc a, pc_tensor_desc b, pc_tensor_desc out,             \
                               long long n, int op) {                                              \
    pc_binary<T>(a, b, out, n, op);                                                                \
  }                                                                                                \
  PC_KERNEL pc_fill_##suffix(pc_tensor_desc out, long long n, double value) {                      \
    pc_fill<T>(out, n, value);                                                                     \
  }                                                                                                \
  PC_KERNEL pc_adamw_##suffix(const float* param, const T* grad, const float* m, const float* v,   \
                              float* param_out, float* m_out, float* v_out, long long n, float lr, \
                              float beta1, float beta2, float eps, float weight_decay,             \
                              float bias_correction1, float bias_correction2) {                    \
    pc_adamw<T>(param, grad, m, v, param_out, m_out, v_out, n, lr, beta1, beta2, eps,              \
                weight_decay, bias_correction1, bias_correction2);                                 \
  }
PC_FOR_EACH_FLOAT(PC_ELEMENTWISE_KERNELS)

// cast between any two float dtypes: decode exactly to double, round once.
PC_DEVICE double pc_load_any(const pc_tensor_desc& d, long long off, int dtype) {
  const char* base = reinterpret_cast<const char*>(d.address);
  switch (dtype) {
    case PC_DTYPE_F64:
      return reinterpret_cast<const double*>(base)[off];
    case PC_DTYPE_F32:
      return reinterpret_cast<const float*>(base)[off];
    case PC_DTYPE_F16:
      return pc_f16_to_double(reinterpret_cast<const unsigned short*>(base)[off]);
    case PC_DTYPE_BF16:
      return pc_bf16_to_double(reinterpret_cast<const unsigned short*>(base)[off]);
    case PC_DTYPE_F8E4M3:
      return pc_decode_small_float(reinterpret_cast<const unsigned char*>(base)[off], 4, 3, false);
    default:
      return pc_decode_small_float(reinterpret_cast<const unsigned char*>(base)[off], 5, 2, true);
  }
}

PC_DEVICE void pc_store_any(const pc_tensor_desc& d, long long off, int dtype, double v) {
  char* base = reinterpret_cast<char*>(d.address);
  switch (dtype) {
    case PC_DTYPE_F64:
      reinterpret_cast<double*>(base)[off] = v;
      break;
    case PC_DTYPE_F32:
      reinterpret_cast<float*>(base)[off] = static_cast<float>(v);
      break;
    case PC_DTYPE_F16:
      reinterpret_cast<unsigned short*>(base)[off] = pc_double_to_f16(v);
      break;
    case PC_DTYPE_BF16:
      reinterpret_cast<unsigned short*>(base)[off] = pc_double_to_bf16(v);
      break;
    case PC_DTYPE_F8E4M3:
      reinterpret_cast<unsigned char*>(base)[off] = pc_double_to_f8e4m3(v);
      break;
    default:
      reinterpret_cast<unsigned char*>(base)[off] = pc_double_to_f8e5m2(v);
      break;
  }
}

PC_KERNEL pc_cast(pc_tensor_desc x, int x_dtype, pc_tensor_desc y, int y_dtype, long long n) {
  for (long long i = pc_global_thread(); i < n; i += pc_grid_threads())
    pc_store_any(y, pc_offset(y, i), y_dtype, pc_load_any(x, pc_offset(x, i), x_dtype));
}
