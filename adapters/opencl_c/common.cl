// Shared prelude of every polychip OpenCL C kernel file (OpenCL C 1.2).
// Compiled once per compute dtype: PC_DTYPE is the polychip_dtype code of T
// (1 f64, 2 f32, 3 f16, 4 bf16). Storage type TS, load LD, store ST (one
// round-to-nearest-even), compute type ACC, and WACC, a wide accumulator for
// long sums (double where the device has fp64).
// f16 has no arithmetic here (PoCL lacks cl_khr_fp16): it is storage only,
// read with vload_half and written with vstore_half_rte. bf16 is ushort.

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define PC_HAS_F64 1
typedef double WACC;
#else
#define PC_HAS_F64 0
typedef float WACC;
#endif

#ifndef PC_DTYPE
#define PC_DTYPE 2
#endif

#define PC_MAX_RANK 8

// float -> bf16 bits, round to nearest even; NaN stays a quiet NaN.
inline ushort pc_f32_to_bf16(float v) {
  uint u = as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}
inline float pc_bf16_to_f32(ushort b) { return as_float(((uint)b) << 16); }

#if PC_DTYPE == 1
typedef double TS;
typedef double ACC;
#define LD(p, i) ((p)[(i)])
#define ST(p, i, v) ((p)[(i)] = (double)(v))
#elif PC_DTYPE == 2
typedef float TS;
typedef float ACC;
#define LD(p, i) ((p)[(i)])
#define ST(p, i, v) ((p)[(i)] = (float)(v))
#elif PC_DTYPE == 3
typedef half TS;
typedef float ACC;
#define LD(p, i) vload_half((i), (p))
#define ST(p, i, v) vstore_half_rte((float)(v), (i), (p))
#elif PC_DTYPE == 4
typedef ushort TS;
typedef float ACC;
#define LD(p, i) pc_bf16_to_f32((p)[(i)])
#define ST(p, i, v) ((p)[(i)] = pc_f32_to_bf16((float)(v)))
#else
#error "PC_DTYPE must be 1 (f64), 2 (f32), 3 (f16) or 4 (bf16)"
#endif

// Shape and strides (in elements) of up to three same-shaped tensors, plus
// each tensor's element offset. Every field is a long so the host struct
// has the same layout without padding.
typedef struct {
  long rank;
  long numel;
  long shape[PC_MAX_RANK];
  long stride[3][PC_MAX_RANK];
  long offset[3];
} pc_layout;

// Element offset of tensor t for the row-major linear index `linear`.
inline long pc_offset(const pc_layout* l, int t, long linear) {
  long off = l->offset[t];
  for (int d = (int)l->rank - 1; d >= 0; --d) {
    long n = l->shape[d];
    long q = linear / n;
    off += (linear - q * n) * l->stride[t][d];
    linear = q;
  }
  return off;
}
