// cast between any two floating dtypes (f64, f32, f16, bf16, f8e4m3,
// f8e5m2) over arbitrary strides. Every value goes through double and is
// rounded once (round to nearest, ties to even), so this file needs fp64;
// the host lists cast only on devices that have it. Tensor 0 is x, 1 is y.

#if PC_HAS_F64

// IEEE-like binary format with `man` mantissa bits and exponent bias `bias`.
// e4m3fn (ieee_like == 0) has no Inf: the top exponent holds normal values up
// to 448 and overflow becomes NaN.
inline uint pc_round_to_format(double x, int man, int bias, int total_bits, int ieee_like,
                               double max_finite) {
  uint sign = signbit(x) ? (1u << (total_bits - 1)) : 0u;
  uint exp_all_ones = (1u << (total_bits - 1 - man)) - 1u;
  if (isnan(x)) {
    if (ieee_like) return sign | (exp_all_ones << man) | (1u << (man - 1));
    return sign | (exp_all_ones << man) | ((1u << man) - 1u);
  }
  double a = fabs(x);
  int emin = 1 - bias;
  double step;
  if (a < ldexp(1.0, emin)) {
    step = ldexp(1.0, emin - man);
  } else {
    int e;
    frexp(a, &e);  // a = f 2^e, f in [0.5, 1)
    step = ldexp(1.0, e - 1 - man);
  }
  double r = rint(a / step) * step;  // exact scaling, RNE in the default mode
  if (r > max_finite) {
    if (ieee_like) return sign | (exp_all_ones << man);
    return sign | (exp_all_ones << man) | ((1u << man) - 1u);
  }
  if (r == 0.0) return sign;
  if (r < ldexp(1.0, emin)) return sign | (uint)(r / ldexp(1.0, emin - man));
  int e;
  double f = frexp(r, &e);  // r = f 2^e
  uint exp_field = (uint)(e - 1 + bias);
  uint man_field = (uint)((f * 2.0 - 1.0) * ldexp(1.0, man));
  return sign | (exp_field << man) | man_field;
}

inline double pc_decode_format(uint bits, int man, int bias, int total_bits, int ieee_like) {
  uint sign = (bits >> (total_bits - 1)) & 1u;
  uint exp_all_ones = (1u << (total_bits - 1 - man)) - 1u;
  uint ef = (bits >> man) & exp_all_ones;
  uint mf = bits & ((1u << man) - 1u);
  double v;
  if (ieee_like && ef == exp_all_ones) {
    v = mf ? NAN : INFINITY;
  } else if (!ieee_like && ef == exp_all_ones && mf == (1u << man) - 1u) {
    v = NAN;
  } else if (ef == 0) {
    v = ldexp((double)mf, 1 - bias - man);
  } else {
    v = ldexp(1.0 + (double)mf / ldexp(1.0, man), (int)ef - bias);
  }
  return sign ? -v : v;
}

inline double pc_load_any(__global const uchar* p, long i, int dtype) {
  switch (dtype) {
    case 1:
      return ((__global const double*)p)[i];
    case 2:
      return (double)((__global const float*)p)[i];
    case 3:
      return (double)vload_half(i, (__global const half*)p);
    case 4:
      return (double)pc_bf16_to_f32(((__global const ushort*)p)[i]);
    case 5:
      return pc_decode_format(p[i], 3, 7, 8, 0);
    default:
      return pc_decode_format(p[i], 2, 15, 8, 1);
  }
}

inline void pc_store_any(__global uchar* p, long i, int dtype, double v) {
  switch (dtype) {
    case 1:
      ((__global double*)p)[i] = v;
      break;
    case 2:
      ((__global float*)p)[i] = (float)v;
      break;
    case 3:
      ((__global ushort*)p)[i] = (ushort)pc_round_to_format(v, 10, 15, 16, 1, 65504.0);
      break;
    case 4:
      ((__global ushort*)p)[i] =
          (ushort)pc_round_to_format(v, 7, 127, 16, 1, 3.3895313892515355e38);
      break;
    case 5:
      p[i] = (uchar)pc_round_to_format(v, 3, 7, 8, 0, 448.0);
      break;
    default:
      p[i] = (uchar)pc_round_to_format(v, 2, 15, 8, 1, 57344.0);
      break;
  }
}

__kernel void pc_cast_kernel(pc_layout l, int src_dtype, int dst_dtype, __global const uchar* x,
                             __global uchar* y) {
  long i = get_global_id(0);
  if (i >= l.numel) return;
  pc_store_any(y, pc_offset(&l, 1, i), dst_dtype, pc_load_any(x, pc_offset(&l, 0, i), src_dtype));
}

#endif
