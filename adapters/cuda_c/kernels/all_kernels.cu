// The whole CUDA-C kernel family in one translation unit, so nvcc and hipcc
// compile it once per target architecture into one module.
#include "attention.cu"
#include "elementwise.cu"
#include "gemm.cu"
#include "loss_embedding_rotary.cu"
#include "norm.cu"
#include "reduction.cu"
