// Elementwise ops over arbitrary strides: one work-item per element of the
// output, indexed row-major; the layout carries every tensor's strides.

// Unary op codes (must match adapters/opencl/kernels/op_codes.hpp).
#define PC_NEG 0
#define PC_EXP 1
#define PC_LOG 2
#define PC_SQRT 3
#define PC_RSQRT 4
#define PC_TANH 5
#define PC_SIGMOID 6
#define PC_RELU 7
#define PC_GELU_ERF 8
#define PC_GELU_TANH 9
#define PC_SILU 10

// Literals in ACC's precision (no double constants in f32/f16/bf16 builds).
#if PC_DTYPE == 1
#define PC_LIT(v) v
#else
#define PC_LIT(v) v##f
#endif

#define PC_GELU_K PC_LIT(0.7978845608028654) /* sqrt(2 / pi) */
#define PC_GELU_C PC_LIT(0.044715)

inline ACC pc_sigmoid(ACC x) { return (ACC)1 / ((ACC)1 + exp(-x)); }

inline ACC pc_unary(int op, ACC x) {
  // gelu and silu tend to -0 as x -> -Inf (the formulas give -Inf * 0).
  if ((op == PC_GELU_ERF || op == PC_GELU_TANH || op == PC_SILU) && isinf(x) && x < 0)
    return -(ACC)0;
  switch (op) {
    case PC_NEG:
      return -x;
    case PC_EXP:
      return exp(x);
    case PC_LOG:
      return log(x);
    case PC_SQRT:
      return sqrt(x);
    case PC_RSQRT:
      return rsqrt(x);
    case PC_TANH:
      return tanh(x);
    case PC_SIGMOID:
      return pc_sigmoid(x);
    case PC_RELU:
      return isnan(x) ? x : (x > (ACC)0 ? x : (ACC)0);
    // erfc keeps the relative accuracy for negative x, where 1 + erf cancels.
    case PC_GELU_ERF:
      return PC_LIT(0.5) * x * erfc(-x * PC_LIT(0.7071067811865476));
    // 0.5 x (1 + tanh u) == x sigmoid(2u), without the cancellation.
    case PC_GELU_TANH: {
      ACC u = (ACC)PC_GELU_K * (x + (ACC)PC_GELU_C * x * x * x);
      return x * pc_sigmoid((ACC)2 * u);
    }
    case PC_SILU:
      return x * pc_sigmoid(x);
  }
  return x;
}

// Backward op codes.
#define PC_RELU_BW 0
#define PC_GELU_ERF_BW 1
#define PC_GELU_TANH_BW 2
#define PC_SILU_BW 3
#define PC_SIGMOID_BW 4
#define PC_TANH_BW 5

inline ACC pc_unary_backward(int op, ACC dy, ACC x) {
  switch (op) {
    // A select, as torch does: Inf or NaN gradients where x <= 0 give 0.
    case PC_RELU_BW:
      return x > (ACC)0 ? dy : (ACC)0;
    case PC_GELU_ERF_BW: {
      ACC cdf = PC_LIT(0.5) * erfc(-x * PC_LIT(0.7071067811865476));
      ACC pdf = exp(-PC_LIT(0.5) * x * x) * PC_LIT(0.3989422804014327);
      return dy * (cdf + x * pdf);
    }
    case PC_GELU_TANH_BW: {
      ACC u = (ACC)PC_GELU_K * (x + (ACC)PC_GELU_C * x * x * x);
      ACC s = pc_sigmoid((ACC)2 * u);  // 0.5 (1 + tanh u)
      ACC du = (ACC)PC_GELU_K * ((ACC)1 + PC_LIT(0.134145) * x * x);
      return dy * (s + x * (ACC)2 * s * ((ACC)1 - s) * du);
    }
    case PC_SILU_BW: {
      ACC s = pc_sigmoid(x);
      return dy * s * ((ACC)1 + x * ((ACC)1 - s));
    }
    case PC_SIGMOID_BW: {
      ACC s = pc_sigmoid(x);
      return dy * s * ((ACC)1 - s);
    }
    // 1 - tanh(x)^2 as 4e / (1 + e)^2, e = exp(-2|x|): no cancellation near
    // saturation, where a tanh a few ulps short of 1 (PoCL's at -Inf)
    // would leave 1 - t^2 far from 0.
    case PC_TANH_BW: {
      ACC e = exp((ACC)-2 * fabs(x));
      return dy * ((ACC)4 * e / (((ACC)1 + e) * ((ACC)1 + e)));
    }
  }
  return dy;
}

// Binary op codes.
#define PC_ADD 0
#define PC_SUB 1
#define PC_MUL 2
#define PC_DIV 3

__kernel void pc_unary_kernel(pc_layout l, int op, __global const TS* x, __global TS* y) {
  long i = get_global_id(0);
  if (i >= l.numel) return;
  ACC v = LD(x, pc_offset(&l, 0, i));
  ST(y, pc_offset(&l, 1, i), pc_unary(op, v));
}

__kernel void pc_unary_backward_kernel(pc_layout l, int op, __global const TS* dy,
                                       __global const TS* x, __global TS* dx) {
  long i = get_global_id(0);
  if (i >= l.numel) return;
  ACC g = LD(dy, pc_offset(&l, 0, i));
  ACC v = LD(x, pc_offset(&l, 1, i));
  ST(dx, pc_offset(&l, 2, i), pc_unary_backward(op, g, v));
}

__kernel void pc_binary_kernel(pc_layout l, int op, __global const TS* a, __global const TS* b,
                               __global TS* out) {
  long i = get_global_id(0);
  if (i >= l.numel) return;
  ACC x = LD(a, pc_offset(&l, 0, i));
  ACC y = LD(b, pc_offset(&l, 1, i));
  ACC r;
  switch (op) {
    case PC_ADD:
      r = x + y;
      break;
    case PC_SUB:
      r = x - y;
      break;
    case PC_MUL:
      r = x * y;
      break;
    default:
      r = x / y;
      break;
  }
  ST(out, pc_offset(&l, 2, i), r);
}

// fill and copy move raw bits, so they are exact for every dtype (f16 has
// no arithmetic type here); the host passes fill's value already rounded.
#define PC_RAW_KERNELS(U, SUFFIX)                                                   \
  __kernel void pc_fill_##SUFFIX(pc_layout l, __global U* out, U bits) {            \
    long i = get_global_id(0);                                                      \
    if (i < l.numel) out[pc_offset(&l, 0, i)] = bits;                               \
  }                                                                                 \
  __kernel void pc_copy_##SUFFIX(pc_layout l, __global const U* x, __global U* y) { \
    long i = get_global_id(0);                                                      \
    if (i < l.numel) y[pc_offset(&l, 1, i)] = x[pc_offset(&l, 0, i)];               \
  }
PC_RAW_KERNELS(ushort, u16)
PC_RAW_KERNELS(uint, u32)
PC_RAW_KERNELS(ulong, u64)

// adamw over contiguous [N] tensors; param, m, v and their outputs are f32,
// grad is T. The step is computed in WACC (double where the device has it;
// the scalars arrive in WACC too) and each output rounded once to f32. Outputs may be the inputs
// (each element is read before it is written).
__kernel void pc_adamw_kernel(long n, __global const float* param, __global const TS* grad,
                              __global const float* m, __global const float* v,
                              __global float* param_out, __global float* m_out,
                              __global float* v_out, WACC lr, WACC beta1, WACC beta2, WACC eps,
                              WACC weight_decay, WACC bias1, WACC bias2) {
  long i = get_global_id(0);
  if (i >= n) return;
  WACC g = (WACC)(float)LD(grad, i);  // g converted to f32 first, as the contract says
  WACC p = (WACC)param[i];
  WACC mi = beta1 * (WACC)m[i] + ((WACC)1 - beta1) * g;
  WACC vi = beta2 * (WACC)v[i] + ((WACC)1 - beta2) * g * g;
  WACC mhat = mi / bias1;
  WACC vhat = vi / bias2;
  param_out[i] = (float)(p - lr * (weight_decay * p + mhat / (sqrt(vhat) + eps)));
  m_out[i] = (float)mi;
  v_out[i] = (float)vi;
}

// Rotate-half RoPE over contiguous x [S, H, D]; cos/sin are f32 [S, D/2].
// sign = -1 for the inverse rotation.
__kernel void pc_rotary_kernel(long s_len, long h_len, long d_len, __global const TS* x,
                               __global const float* cos_t, __global const float* sin_t,
                               __global TS* y, float sign) {
  long gid = get_global_id(0);
  long half_d = d_len / 2;
  if (gid >= s_len * h_len * half_d) return;
  long i = gid % half_d;
  long sh = gid / half_d;
  long s = sh / h_len;
  long base = sh * d_len;
  ACC c = (ACC)cos_t[s * half_d + i];
  ACC sn = (ACC)sign * (ACC)sin_t[s * half_d + i];
  ACC x1 = LD(x, base + i);
  ACC x2 = LD(x, base + i + half_d);
  ST(y, base + i, x1 * c - x2 * sn);
  ST(y, base + i + half_d, x2 * c + x1 * sn);
}
