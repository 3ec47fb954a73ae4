// The portability header of the CUDA-C kernel family: the only place where
// CUDA and HIP differ. Everything else in kernels/ is plain CUDA C that
// hipcc accepts unchanged.
//
// What we rely on, and why it is portable:
//  - __global__, __device__, __shared__, __syncthreads, threadIdx/blockIdx/
//    blockDim/gridDim: identical spelling in both.
//  - f16/bf16 are stored as 16-bit integers and converted in software
//    (numeric.cuh), so no vendor half/bfloat16 header is needed and the
//    rounding is bit-identical on both vendors.
//  - No warp shuffles or warp-size assumptions (32 on NVIDIA, 64 on AMD):
//    block reductions go through shared memory in a fixed order.
//  - No atomics on floating values: every reduction order is fixed, so the
//    results are deterministic run to run.
#ifndef POLYCHIP_CUDA_C_PORTABILITY_H_
#define POLYCHIP_CUDA_C_PORTABILITY_H_

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define PC_BACKEND_HIP 1
#elif defined(PC_HOST_EMULATION)
// The scalar device functions compiled by the host compiler, so unit tests
// can check them bit for bit against polychip's reference conversions on a
// machine without a GPU (tests/kernel_numeric_host_test.cpp), and the
// kernels run with one thread per block (tests/kernel_emulation_test.cpp):
// that checks their arithmetic and the host's argument packing, not their
// parallel behaviour.
#include <math.h>

#include <cstring>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
inline double __longlong_as_double(long long v) {
  double d;
  std::memcpy(&d, &v, sizeof d);
  return d;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline float __int_as_float(int i) { return __uint_as_float(static_cast<unsigned>(i)); }
struct pc_host_dim3 {
  unsigned x, y, z;
};
inline constexpr pc_host_dim3 threadIdx{0, 0, 0}, blockIdx{0, 0, 0}, blockDim{1, 1, 1},
    gridDim{1, 1, 1};
#define __shared__ static
#define __syncthreads()
// One emulated thread per block and one block per grid: grid-stride loops
// cover everything; dynamic shared memory is a static buffer.
#define PC_EXTERN_SHARED(name) alignas(16) static unsigned char name[1 << 22]
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  if (v < old) *p = v;
  return old;
}
#else
#define PC_BACKEND_CUDA 1
#endif

#ifndef PC_EXTERN_SHARED
// Dynamic shared memory (the launch's shared_bytes).
#define PC_EXTERN_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

// Every kernel has C linkage so the host finds it by name
// (cuModuleGetFunction / hipModuleGetFunction).
#define PC_KERNEL extern "C" __global__ void __launch_bounds__(PC_BLOCK_THREADS)
#define PC_DEVICE static __device__ __forceinline__

#endif  // POLYCHIP_CUDA_C_PORTABILITY_H_
