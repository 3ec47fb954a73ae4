// Helpers shared by the kernel launchers: the program cache (one program
// per OpenCL C file and compute dtype, built on first use), argument
// setting, tensor checks, layouts and scratch buffers.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>

#include "../opencl_adapter.hpp"
#include "host/tensor_elements.hpp"
#include "pc_layout.hpp"

namespace polychip::opencl {

// The OpenCL C text of adapters/opencl_c/<file>.cl, embedded at build time
// (generated kernel_sources.cpp). Throws INTERNAL for an unknown file.
std::string_view opencl_c_source(std::string_view file);

// The program for (file, dtype) on `device`, built with the common prelude
// and -DPC_DTYPE=<dtype>; cached per device (and on disk by the OpenCL
// implementation, e.g. PoCL under POCL_CACHE_DIR). Caller holds device.mutex.
cl_program program_for(Device& device, const std::string& file, int dtype);

// A scalar kernel argument of the kernels' ACC type: double for f64, float
// for the other compute dtypes.
struct AccScalar {
  AccScalar(polychip_dtype dtype, double value)
      : is_double(dtype == POLYCHIP_DTYPE_F64), d(value), f(static_cast<float>(value)) {}
  bool is_double;
  double d;
  float f;
};

class ContiguousOperands;

// One kernel launch: holds the device lock while arguments are set and the
// kernel is enqueued (cl_kernel objects are not thread safe).
class Launch {
 public:
  Launch(Device& device, const char* file, int dtype, const char* kernel);
  template <typename T>
  Launch& arg(const T& value) {
    return raw(sizeof(T), &value);
  }
  Launch& arg(const AccScalar& s) {
    return s.is_double ? raw(sizeof s.d, &s.d) : raw(sizeof s.f, &s.f);
  }
  Launch& buffer(cl_mem memory) { return raw(sizeof(cl_mem), &memory); }
  // The buffers of the call's tensors `slots`, in that order.
  Launch& buffers(ContiguousOperands& operands, std::initializer_list<int> slots);
  Launch& local_bytes(size_t bytes) { return raw(bytes, nullptr); }
  // 1-3 dimensions; local may be null (the implementation chooses).
  void run(cl_command_queue queue, int dims, const size_t* global, const size_t* local = nullptr);
  void run1d(cl_command_queue queue, uint64_t count);

 private:
  Launch& raw(size_t size, const void* value);
  std::unique_lock<std::mutex> lock_;
  cl_kernel kernel_ = nullptr;
  cl_uint index_ = 0;
  std::string name_;
};

// The call as the launchers see it.
struct KernelCall {
  Device& device;
  int32_t device_index;
  cl_command_queue queue;
  const polychip_tensor* tensors;
  int32_t num_tensors;
  const polychip_op_attrs& attrs;
  std::string_view op;
  const polychip_tensor& t(int i) const { return tensors[i]; }
  int64_t i(int slot) const { return attrs.ints[slot]; }
  double f(int slot) const { return attrs.floats[slot]; }
};

using opencl_family::numel;
size_t element_size(polychip_dtype dtype);
// The tensor's buffer; nullptr for an empty tensor. Throws when the memory
// is another device's or pinned host memory.
cl_mem tensor_mem(const KernelCall& call, int index);
// byte_offset in elements; throws when it is not a multiple of the size.
int64_t element_offset(const KernelCall& call, int index);

using opencl_c::Layout;
// Layout of up to three tensors with the shape of the first.
Layout make_layout(const KernelCall& call, std::initializer_list<int> tensors);

// Buffers at element offset 0 for ops whose kernels take contiguous
// tensors from the buffer start. A tensor at byte_offset 0 is used as is;
// others are staged: inputs copied into a scratch buffer first, outputs
// computed in scratch and copied back by finish().
class ContiguousOperands {
 public:
  explicit ContiguousOperands(const KernelCall& call);
  ~ContiguousOperands();
  ContiguousOperands(const ContiguousOperands&) = delete;
  ContiguousOperands& operator=(const ContiguousOperands&) = delete;
  cl_mem get(int index);
  void finish();

 private:
  const KernelCall& call_;
  cl_mem staged_[POLYCHIP_MAX_OP_TENSORS] = {};
  bool is_output_[POLYCHIP_MAX_OP_TENSORS] = {};
};

// A temporary device buffer, released when it goes out of scope (OpenCL
// keeps it alive until enqueued work using it is done).
class Scratch {
 public:
  Scratch(Device& device, size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  cl_mem mem() const { return mem_; }
  // Fills with a repeated 4-byte pattern on `queue`.
  void fill_u32(cl_command_queue queue, uint32_t value, size_t bytes);
  // Blocking read of the first int.
  int32_t read_i32(cl_command_queue queue);

 private:
  cl_mem mem_ = nullptr;
};

}  // namespace polychip::opencl
