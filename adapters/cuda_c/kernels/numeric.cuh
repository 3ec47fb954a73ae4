// Storage types, conversions and accumulation types shared by every kernel.
// f16 and bf16 are 16-bit storage converted in software with one
// round-to-nearest-even from the exact value, so CUDA and HIP produce the
// same bits as the cpu reference.
#pragma once

#include "kernel_abi.h"
#include "portability.h"

struct pc_f16 {
  unsigned short bits;
};
struct pc_bf16 {
  unsigned short bits;
};

// Accumulation type: double for f64, float for everything narrower.
template <typename T>
struct pc_acc {
  using type = float;
};
template <>
struct pc_acc<double> {
  using type = double;
};
template <typename T>
using acc_t = typename pc_acc<T>::type;

// ---- decoding: exact --------------------------------------------------------

// A binary float with `exp_bits` exponent and `man_bits` mantissa bits.
// ieee_specials: the all-ones exponent encodes Inf/NaN (f16, bf16, e5m2);
// otherwise only all-ones exponent and mantissa is NaN (e4m3fn).
PC_DEVICE double pc_decode_small_float(unsigned bits, int exp_bits, int man_bits,
                                       bool ieee_specials) {
  const unsigned sign = (bits >> (exp_bits + man_bits)) & 1u;
  const unsigned exp_field = (bits >> man_bits) & ((1u << exp_bits) - 1u);
  const unsigned man = bits & ((1u << man_bits) - 1u);
  const int bias = (1 << (exp_bits - 1)) - 1;
  const unsigned exp_max = (1u << exp_bits) - 1u;
  double value;
  if (ieee_specials && exp_field == exp_max) {
    value = man ? __longlong_as_double(0x7ff8000000000000ll)
                : __longlong_as_double(0x7ff0000000000000ll);
  } else if (!ieee_specials && exp_field == exp_max && man == (1u << man_bits) - 1u) {
    value = __longlong_as_double(0x7ff8000000000000ll);
  } else if (exp_field == 0) {
    value = ldexp(static_cast<double>(man), 1 - bias - man_bits);
  } else {
    value = ldexp(static_cast<double>(man | (1u << man_bits)),
                  static_cast<int>(exp_field) - bias - man_bits);
  }
  return sign ? -value : value;
}

// ---- encoding: one rounding to nearest, ties to even ------------------------

// Rounds `v` to a small float format; values above max_finite after rounding
// overflow to Inf (ieee_specials) or NaN (e4m3fn).
PC_DEVICE unsigned pc_encode_small_float(double v, int exp_bits, int man_bits, bool ieee_specials,
                                         double max_finite) {
  const unsigned sign_bit = 1u << (exp_bits + man_bits);
  const unsigned exp_max = (1u << exp_bits) - 1u;
  const unsigned nan_bits = ieee_specials ? ((exp_max << man_bits) | (1u << (man_bits - 1)))
                                          : ((exp_max << man_bits) | ((1u << man_bits) - 1u));
  const unsigned inf_bits = ieee_specials ? (exp_max << man_bits) : nan_bits;
  if (v != v) return nan_bits;
  const unsigned sign = signbit(v) ? sign_bit : 0u;
  double a = fabs(v);
  if (a == 0.0) return sign;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int emin = 1 - bias;
  if (isinf(a)) return sign | inf_bits;
  int e;
  frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): unbiased exponent is e - 1
  int unbiased = e - 1;
  if (unbiased < emin) unbiased = emin;
  // quantum = 2^(unbiased - man_bits); rint rounds half to even.
  double scaled = rint(ldexp(a, man_bits - unbiased));
  double r = ldexp(scaled, unbiased - man_bits);
  if (r > max_finite) return sign | inf_bits;
  if (r == 0.0) return sign;
  frexp(r, &e);
  unbiased = e - 1;
  if (unbiased < emin) {  // subnormal
    unsigned man = static_cast<unsigned>(ldexp(r, man_bits - emin));
    return sign | man;
  }
  unsigned man = static_cast<unsigned>(ldexp(r, man_bits - unbiased)) - (1u << man_bits);
  return sign | (static_cast<unsigned>(unbiased + bias) << man_bits) | man;
}

PC_DEVICE double pc_f16_to_double(unsigned short b) {
  return pc_decode_small_float(b, 5, 10, true);
}
PC_DEVICE double pc_bf16_to_double(unsigned short b) {
  return pc_decode_small_float(b, 8, 7, true);
}
PC_DEVICE unsigned short pc_double_to_f16(double v) {
  return static_cast<unsigned short>(pc_encode_small_float(v, 5, 10, true, 65504.0));
}
PC_DEVICE unsigned short pc_double_to_bf16(double v) {
  return static_cast<unsigned short>(pc_encode_small_float(v, 8, 7, true, 3.3895313892515355e38));
}
PC_DEVICE unsigned char pc_double_to_f8e4m3(double v) {
  return static_cast<unsigned char>(pc_encode_small_float(v, 4, 3, false, 448.0));
}
PC_DEVICE unsigned char pc_double_to_f8e5m2(double v) {
  return static_cast<unsigned char>(pc_encode_small_float(v, 5, 2, true, 57344.0));
}

// bf16 <- float: the top half of the f32 bits, rounded to nearest even (exact
// in one step because bf16 is a truncated f32).
PC_DEVICE unsigned short pc_float_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<unsigned short>(u >> 16);
}
PC_DEVICE float pc_bf16_to_float(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}

// ---- load / store in the accumulation type ---------------------------------

PC_DEVICE double pc_load(const double* p) { return *p; }
PC_DEVICE float pc_load(const float* p) { return *p; }
PC_DEVICE float pc_load(const pc_f16* p) { return static_cast<float>(pc_f16_to_double(p->bits)); }
PC_DEVICE float pc_load(const pc_bf16* p) { return pc_bf16_to_float(p->bits); }

PC_DEVICE void pc_store(double* p, double v) { *p = v; }
PC_DEVICE void pc_store(float* p, float v) { *p = v; }
// f32 -> f16 through double: one rounding from the exact f32 value.
PC_DEVICE void pc_store(pc_f16* p, float v) { p->bits = pc_double_to_f16(v); }
PC_DEVICE void pc_store(pc_bf16* p, float v) { p->bits = pc_float_to_bf16(v); }

// Stores a double into T with a single rounding (fill values, scalars).
PC_DEVICE void pc_store_from_double(double* p, double v) { *p = v; }
PC_DEVICE void pc_store_from_double(float* p, double v) { *p = static_cast<float>(v); }
PC_DEVICE void pc_store_from_double(pc_f16* p, double v) { p->bits = pc_double_to_f16(v); }
PC_DEVICE void pc_store_from_double(pc_bf16* p, double v) { p->bits = pc_double_to_bf16(v); }

// ---- index math ------------------------------------------------------------

// Element offset (in elements) of the linear row-major index `i` of `shape`
// inside a view with the given strides.
PC_DEVICE long long pc_offset(const pc_tensor_desc& d, long long i) {
  if (d.contiguous) return i;
  long long off = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    const long long extent = d.shape[k];
    const long long c = extent ? i % extent : 0;
    i = extent ? i / extent : 0;
    off += c * d.strides[k];
  }
  return off;
}

template <typename T>
PC_DEVICE T* pc_ptr(const pc_tensor_desc& d) {
  return reinterpret_cast<T*>(d.address);
}

PC_DEVICE long long pc_global_thread() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
PC_DEVICE long long pc_grid_threads() { return static_cast<long long>(gridDim.x) * blockDim.x; }

// Reads an index tensor element (i32 or i64).
PC_DEVICE long long pc_load_index(const void* base, long long i, int index_is_64) {
  return index_is_64 ? static_cast<const long long*>(base)[i]
                     : static_cast<long long>(static_cast<const int*>(base)[i]);
}

// Records the first bad position (lowest wins) in the stream's error word.
PC_DEVICE void pc_report_bad_index(unsigned long long* error_word, long long position) {
  if (error_word) atomicMin(error_word, static_cast<unsigned long long>(position) + 1ull);
}
