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
#else
#define PC_BACKEND_CUDA 1
#endif

// Every kernel has C linkage so the host finds it by name
// (cuModuleGetFunction / hipModuleGetFunction).
#define PC_KERNEL extern "C" __global__ void __launch_bounds__(PC_BLOCK_THREADS)
#define PC_DEVICE static __device__ __forceinline__

#endif  // POLYCHIP_CUDA_C_PORTABILITY_H_
