#include "launch.hpp"

#include <fmt/format.h>

#include "polychip/op_contract.hpp"

namespace polychip::opencl {

cl_program program_for(Device& device, const std::string& file, int dtype) {
  auto key = std::make_pair(file, dtype);
  if (auto it = device.programs.find(key); it != device.programs.end()) return it->second;
  std::string text = std::string(opencl_c_source("common"));
  text += "\n";
  text += opencl_c_source(file);
  const char* ptr = text.c_str();
  size_t len = text.size();
  cl_int err = CL_SUCCESS;
  cl_program program = cl().clCreateProgramWithSource(device.context, 1, &ptr, &len, &err);
  check_cl(err, "clCreateProgramWithSource");
  std::string options = fmt::format("-cl-std=CL1.2 -DPC_DTYPE={}", dtype);
  if (device.correctly_rounded_divide_sqrt) options += " -cl-fp32-correctly-rounded-divide-sqrt";
  err = cl().clBuildProgram(program, 1, &device.id, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t size = 0;
    cl().clGetProgramBuildInfo(program, device.id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    cl().clGetProgramBuildInfo(program, device.id, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    cl().clReleaseProgram(program);
    if (log.size() > 4000) log.resize(4000);
    fail(POLYCHIP_INTERNAL, fmt::format("building opencl_c/{}.cl (dtype {}) failed: {}\n{}", file,
                                        dtype, cl_error_name(err), log));
  }
  device.programs.emplace(key, program);
  return program;
}

Launch::Launch(Device& device, const char* file, int dtype, const char* kernel)
    : lock_(device.mutex), name_(kernel) {
  std::string key = fmt::format("{}/{}/{}", file, dtype, kernel);
  if (auto it = device.kernels.find(key); it != device.kernels.end()) {
    kernel_ = it->second;
    return;
  }
  cl_program program = program_for(device, file, dtype);
  cl_int err = CL_SUCCESS;
  kernel_ = cl().clCreateKernel(program, kernel, &err);
  check_cl(err, "clCreateKernel");
  device.kernels.emplace(key, kernel_);
}

Launch& Launch::raw(size_t size, const void* value) {
  cl_int err = cl().clSetKernelArg(kernel_, index_, size, value);
  if (err != CL_SUCCESS)
    fail(POLYCHIP_INTERNAL,
         fmt::format("clSetKernelArg({}, argument {}): {}", name_, index_, cl_error_name(err)));
  ++index_;
  return *this;
}

Launch& Launch::buffers(ContiguousOperands& operands, std::initializer_list<int> slots) {
  for (int slot : slots) buffer(operands.get(slot));
  return *this;
}

void Launch::run(cl_command_queue queue, int dims, const size_t* global, const size_t* local) {
  for (int d = 0; d < dims; ++d)
    if (global[d] == 0) return;  // nothing to do
  cl_int err = cl().clEnqueueNDRangeKernel(queue, kernel_, static_cast<cl_uint>(dims), nullptr,
                                           global, local, 0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    fail(err == CL_OUT_OF_RESOURCES || err == CL_MEM_OBJECT_ALLOCATION_FAILURE
             ? POLYCHIP_OUT_OF_MEMORY
             : POLYCHIP_INTERNAL,
         fmt::format("clEnqueueNDRangeKernel({}): {}", name_, cl_error_name(err)));
  cl().clFlush(queue);
}

void Launch::run1d(cl_command_queue queue, uint64_t count) {
  size_t global = static_cast<size_t>(count);
  run(queue, 1, &global);
}

size_t element_size(polychip_dtype dtype) {
  switch (dtype) {
    case POLYCHIP_DTYPE_F64:
    case POLYCHIP_DTYPE_I64:
      return 8;
    case POLYCHIP_DTYPE_F32:
    case POLYCHIP_DTYPE_I32:
      return 4;
    case POLYCHIP_DTYPE_F16:
    case POLYCHIP_DTYPE_BF16:
      return 2;
    default:
      return 1;
  }
}

cl_mem tensor_mem(const KernelCall& call, int index) {
  const polychip_tensor& t = call.t(index);
  if (!t.memory) {
    if (numel(t) == 0) return nullptr;
    fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("{}: tensor {} has no memory", call.op, index));
  }
  const Memory* m = as_memory(t.memory);
  if (m->device != call.device_index)
    fail(POLYCHIP_INVALID_ARGUMENT,
         fmt::format("{}: tensor {} lives on opencl device {}, the call runs on device {}", call.op,
                     index, m->device, call.device_index));
  if (m->kind != POLYCHIP_MEMORY_DEVICE)
    fail(POLYCHIP_UNSUPPORTED,
         fmt::format("{}: tensor {} is in pinned host memory; opencl kernels take device memory",
                     call.op, index));
  return m->mem;
}

int64_t element_offset(const KernelCall& call, int index) {
  const polychip_tensor& t = call.t(index);
  size_t es = element_size(t.dtype);
  if (t.byte_offset % es != 0)
    fail(POLYCHIP_INVALID_ARGUMENT,
         fmt::format("{}: tensor {} has byte_offset {}, not a multiple of its element size {}",
                     call.op, index, t.byte_offset, es));
  return static_cast<int64_t>(t.byte_offset / es);
}

Layout make_layout(const KernelCall& call, std::initializer_list<int> tensors) {
  Layout l;
  const polychip_tensor& first = call.t(*tensors.begin());
  l.rank = first.rank;
  l.numel = numel(first);
  for (int d = 0; d < first.rank; ++d) l.shape[d] = first.shape[d];
  int k = 0;
  for (int index : tensors) {
    const polychip_tensor& t = call.t(index);
    for (int d = 0; d < t.rank && d < first.rank; ++d) l.stride[k][d] = t.strides[d];
    l.offset[k] = element_offset(call, index);
    ++k;
  }
  return l;
}

ContiguousOperands::ContiguousOperands(const KernelCall& call) : call_(call) {
  if (const OpSpec* spec = find_op(call.op))
    for (size_t k = 0; k < spec->tensors.size() && k < POLYCHIP_MAX_OP_TENSORS; ++k)
      is_output_[k] = spec->tensors[k].is_output;
}

ContiguousOperands::~ContiguousOperands() {
  for (cl_mem m : staged_)
    if (m) cl().clReleaseMemObject(m);
}

cl_mem ContiguousOperands::get(int index) {
  cl_mem mem = tensor_mem(call_, index);
  const polychip_tensor& t = call_.t(index);
  if (!mem || t.byte_offset == 0) return mem;
  if (staged_[index]) return staged_[index];
  size_t bytes = static_cast<size_t>(numel(t)) * element_size(t.dtype);
  cl_int err = CL_SUCCESS;
  staged_[index] =
      cl().clCreateBuffer(call_.device.context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  check_cl(err, "clCreateBuffer (staging)");
  if (!is_output_[index])
    check_cl(cl().clEnqueueCopyBuffer(call_.queue, mem, staged_[index], t.byte_offset, 0, bytes, 0,
                                      nullptr, nullptr),
             "clEnqueueCopyBuffer (staging in)");
  return staged_[index];
}

void ContiguousOperands::finish() {
  for (int k = 0; k < call_.num_tensors && k < POLYCHIP_MAX_OP_TENSORS; ++k) {
    if (!staged_[k] || !is_output_[k]) continue;
    const polychip_tensor& t = call_.t(k);
    size_t bytes = static_cast<size_t>(numel(t)) * element_size(t.dtype);
    check_cl(cl().clEnqueueCopyBuffer(call_.queue, staged_[k], tensor_mem(call_, k), 0,
                                      t.byte_offset, bytes, 0, nullptr, nullptr),
             "clEnqueueCopyBuffer (staging out)");
  }
}

Scratch::Scratch(Device& device, size_t bytes) {
  cl_int err = CL_SUCCESS;
  mem_ = cl().clCreateBuffer(device.context, CL_MEM_READ_WRITE, bytes ? bytes : 4, nullptr, &err);
  check_cl(err, "clCreateBuffer (scratch)");
}

Scratch::~Scratch() {
  if (mem_) cl().clReleaseMemObject(mem_);
}

void Scratch::fill_u32(cl_command_queue queue, uint32_t value, size_t bytes) {
  check_cl(
      cl().clEnqueueFillBuffer(queue, mem_, &value, sizeof value, 0, bytes, 0, nullptr, nullptr),
      "clEnqueueFillBuffer");
}

int32_t Scratch::read_i32(cl_command_queue queue) {
  int32_t v = 0;
  check_cl(cl().clEnqueueReadBuffer(queue, mem_, CL_TRUE, 0, sizeof v, &v, 0, nullptr, nullptr),
           "clEnqueueReadBuffer (scratch)");
  return v;
}

}  // namespace polychip::opencl

namespace polychip::opencl {

std::string_view embedded_opencl_c(std::string_view name);  // generated

std::string_view opencl_c_source(std::string_view file) {
  std::string_view text = embedded_opencl_c(file);
  if (text.empty())
    fail(POLYCHIP_INTERNAL, fmt::format("opencl_c/{}.cl is not embedded in this build", file));
  return text;
}

}  // namespace polychip::opencl
