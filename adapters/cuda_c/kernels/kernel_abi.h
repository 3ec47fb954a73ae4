/* The contract between the host side of the CUDA/HIP adapters and the
 * CUDA-C kernels: argument structs, op codes and launch constants. Included
 * by both the kernels (nvcc/hipcc) and the host C++ (gpu_common), so the
 * two can never disagree. Plain C, fixed-width fields only. */
#ifndef POLYCHIP_CUDA_C_KERNEL_ABI_H_
#define POLYCHIP_CUDA_C_KERNEL_ABI_H_

#define PC_MAX_RANK 8
/* Threads per block of every kernel except gemm. */
#define PC_BLOCK_THREADS 256
/* gemm: square output tile computed by one block of PC_GEMM_TILE^2 threads. */
#define PC_GEMM_TILE 16

/* A strided view: `address` is the device address of element [0,...,0];
 * strides are in elements. Passed by value to elementwise and reduction
 * kernels (144 bytes). */
typedef struct pc_tensor_desc {
  unsigned long long address;
  int rank;
  int contiguous; /* 1 when row-major dense: kernels skip index math */
  long long shape[PC_MAX_RANK];
  long long strides[PC_MAX_RANK];
} pc_tensor_desc;

/* pc_unary_<T>: y = f(x) */
enum pc_unary_op {
  PC_UNARY_COPY = 0,
  PC_UNARY_NEG = 1,
  PC_UNARY_EXP = 2,
  PC_UNARY_LOG = 3,
  PC_UNARY_SQRT = 4,
  PC_UNARY_RSQRT = 5,
  PC_UNARY_TANH = 6,
  PC_UNARY_SIGMOID = 7,
  PC_UNARY_RELU = 8,
  PC_UNARY_GELU = 9,
  PC_UNARY_SILU = 10
};

/* pc_unary_backward_<T>: dx = dy * f'(x) */
enum pc_unary_backward_op {
  PC_BACKWARD_RELU = 0,
  PC_BACKWARD_GELU = 1,
  PC_BACKWARD_SILU = 2,
  PC_BACKWARD_SIGMOID = 3,
  PC_BACKWARD_TANH = 4
};

/* pc_binary_<T>: out = a (op) b */
enum pc_binary_op { PC_BINARY_ADD = 0, PC_BINARY_SUB = 1, PC_BINARY_MUL = 2, PC_BINARY_DIV = 3 };

/* pc_reduce_<T>: y = reduction of x along one axis */
enum pc_reduce_op {
  PC_REDUCE_SUM = 0,
  PC_REDUCE_MEAN = 1,
  PC_REDUCE_MAX = 2,
  PC_REDUCE_L2_NORM = 3
};

/* pc_softmax_<T> and pc_softmax_backward_<T> */
enum pc_softmax_op { PC_SOFTMAX = 0, PC_LOG_SOFTMAX = 1 };

/* Element dtype codes used by pc_cast: the polychip_dtype values. */
enum pc_dtype_code {
  PC_DTYPE_F64 = 1,
  PC_DTYPE_F32 = 2,
  PC_DTYPE_F16 = 3,
  PC_DTYPE_BF16 = 4,
  PC_DTYPE_F8E4M3 = 5,
  PC_DTYPE_F8E5M2 = 6
};

/* A stream's error word: kernels that find a bad index (a target or token id
 * out of range) lower it atomically to (position + 1), so the first bad
 * position wins whatever the timing; the host sets it to PC_ERROR_NONE
 * before such an op and reads it back after. */
#define PC_ERROR_NONE 0xffffffffffffffffull

#endif /* POLYCHIP_CUDA_C_KERNEL_ABI_H_ */
