// Kernels on Level Zero: the shared OpenCL C sources, compiled to SPIR-V at
// build time (one module per file and dtype), created with zeModuleCreate
// on first use and launched on the stream's queue. The table lists the ops
// with a launcher here (see docs in the adapter's README section of
// docs/opencl.md); other ops are absent, so the HAL reports NotSupported.
#include <cmath>
#include <cstring>
#include <span>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "host/contract_checks.hpp"
#include "host/kernel_table.hpp"
#include "host/tensor_elements.hpp"
#include "launch_geometry.hpp"
#include "level_zero_adapter.hpp"
#include "pc_layout.hpp"
#include "polychip/dtype.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::level_zero {

std::string_view embedded_spirv(std::string_view name);  // generated

namespace {

using opencl_c::Layout;

ze_module_handle_t module_for(Device& dev, const std::string& file, int dtype) {
  auto key = std::make_pair(file, dtype);
  if (auto it = dev.modules.find(key); it != dev.modules.end()) return it->second;
  std::string_view il = embedded_spirv(fmt::format("{}/{}", file, dtype));
  if (il.empty())
    fail(POLYCHIP_INTERNAL, fmt::format("no SPIR-V for opencl_c/{}.cl, dtype {}", file, dtype));
  ze_module_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
  desc.format = ZE_MODULE_FORMAT_IL_SPIRV;
  desc.inputSize = il.size();
  desc.pInputModule = reinterpret_cast<const uint8_t*>(il.data());
  desc.pBuildFlags = "";
  ze_module_handle_t module = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  ze_result_t r = ze().zeModuleCreate(dev.context, dev.handle, &desc, &module, &log);
  std::string log_text;
  if (log) {
    size_t size = 0;
    ze().zeModuleBuildLogGetString(log, &size, nullptr);
    log_text.resize(size);
    if (size) ze().zeModuleBuildLogGetString(log, &size, log_text.data());
    while (!log_text.empty() && log_text.back() == '\0') log_text.pop_back();
    ze().zeModuleBuildLogDestroy(log);
  }
  if (r != ZE_RESULT_SUCCESS)
    fail(POLYCHIP_UNAVAILABLE,
         fmt::format("zeModuleCreate(opencl_c/{}.cl as SPIR-V, {} bytes, dtype {}): {}{}{}", file,
                     il.size(), dtype, ze_result_name(r), log_text.empty() ? "" : ": ", log_text));
  dev.modules.emplace(key, module);
  return module;
}

// Pointer to element [0...] of a tensor (device memory only).
void* tensor_ptr(const polychip_kernel_args& a, int index) {
  const polychip_tensor& t = a.tensors[index];
  if (!t.memory) return nullptr;
  const Memory* m = as_memory(t.memory);
  if (m->device != a.device)
    fail(POLYCHIP_INVALID_ARGUMENT,
         fmt::format("tensor {} lives on level_zero device {}, the call runs on device {}", index,
                     m->device, a.device));
  if (m->kind != POLYCHIP_MEMORY_DEVICE)
    fail(POLYCHIP_UNSUPPORTED, fmt::format("tensor {} is in pinned host memory", index));
  return static_cast<char*>(m->ptr) + t.byte_offset;
}

using opencl_family::numel;

// Whether two row-major tensors share bytes of the same memory.
bool overlaps(const polychip_tensor& x, const polychip_tensor& y) {
  if (!x.memory || x.memory != y.memory) return false;
  auto end = [](const polychip_tensor& t) {
    return t.byte_offset +
           static_cast<uint64_t>(numel(t)) * dtype_size(static_cast<DType>(t.dtype));
  };
  return x.byte_offset < end(y) && y.byte_offset < end(x);
}

// Layout with element offsets 0: pointers already include byte_offset.
Layout make_layout(const polychip_kernel_args& a, std::initializer_list<int> tensors) {
  Layout l;
  const polychip_tensor& first = a.tensors[*tensors.begin()];
  l.rank = first.rank;
  l.numel = numel(first);
  for (int d = 0; d < first.rank; ++d) l.shape[d] = first.shape[d];
  int k = 0;
  for (int index : tensors) {
    for (int d = 0; d < first.rank; ++d) l.stride[k][d] = a.tensors[index].strides[d];
    ++k;
  }
  return l;
}

// One launch: kernel arguments are captured when the launch is appended,
// so the device lock covers setting them and appending.
class ZeLaunch {
 public:
  ZeLaunch(Device& dev, const polychip_kernel_args& a, const char* file, int dtype,
           const char* kernel)
      : dev_(dev), args_(a), lock_(dev.mutex), name_(kernel) {
    std::string key = fmt::format("{}/{}/{}", file, dtype, kernel);
    if (auto it = dev.kernels.find(key); it != dev.kernels.end()) {
      kernel_ = it->second;
      return;
    }
    ze_module_handle_t module = module_for(dev, file, dtype);
    ze_kernel_desc_t desc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, kernel};
    check_ze(ze().zeKernelCreate(module, &desc, &kernel_), "zeKernelCreate");
    dev.kernels.emplace(key, kernel_);
  }
  template <typename T>
  ZeLaunch& arg(const T& v) {
    check_ze(ze().zeKernelSetArgumentValue(kernel_, index_++, sizeof(T), &v),
             "zeKernelSetArgumentValue");
    return *this;
  }
  ZeLaunch& ptr(int tensor) { return arg(tensor_ptr(args_, tensor)); }
  void run(const LaunchGeometry& g) {
    check_ze(ze().zeKernelSetGroupSize(kernel_, g.group_size[0], g.group_size[1], g.group_size[2]),
             "zeKernelSetGroupSize");
    ze_group_count_t count{g.group_count[0], g.group_count[1], g.group_count[2]};
    Stream* s = as_stream(args_.stream);
    s->submit(dev_, [&](ze_command_list_handle_t list) {
      check_ze(ze().zeCommandListAppendLaunchKernel(list, kernel_, &count, nullptr, 0, nullptr),
               "zeCommandListAppendLaunchKernel");
    });
  }
  void run1d(uint64_t items) {
    if (items == 0) return;
    LaunchGeometry g;
    std::string error;
    if (!geometry_1d(items, std::min<uint32_t>(dev_.max_group_size, 256), dev_.max_group_count, &g,
                     &error))
      fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("{}: {}", name_, error));
    run(g);
  }

 private:
  Device& dev_;
  const polychip_kernel_args& args_;
  std::unique_lock<std::mutex> lock_;
  ze_kernel_handle_t kernel_ = nullptr;
  uint32_t index_ = 0;
  std::string name_;
};

// ACC-typed scalar (double for f64, float otherwise).
template <typename F>
void with_acc(polychip_dtype dtype, double v, F&& f) {
  if (dtype == POLYCHIP_DTYPE_F64)
    f(v);
  else
    f(static_cast<float>(v));
}

int code_of(std::string_view op, const polychip_op_attrs& attrs) {
  static const std::unordered_map<std::string_view, int> codes = {
      {"neg", 0},           {"exp", 1},           {"log", 2},           {"sqrt", 3},
      {"rsqrt", 4},         {"tanh", 5},          {"sigmoid", 6},       {"relu", 7},
      {"silu", 10},         {"relu_backward", 0}, {"silu_backward", 3}, {"sigmoid_backward", 4},
      {"tanh_backward", 5}, {"add", 0},           {"sub", 1},           {"mul", 2},
      {"div", 3},           {"reduce_sum", 0},    {"reduce_mean", 1},   {"reduce_max", 2},
      {"l2_norm", 3}};
  if (op == "gelu") return attrs.ints[attr::kGeluApproximate] ? 9 : 8;
  if (op == "gelu_backward") return attrs.ints[attr::kGeluApproximate] ? 2 : 1;
  return codes.at(op);
}

// A device buffer for one call, freed when the call is done (the call
// synchronizes its stream before that).
class DeviceScratch {
 public:
  DeviceScratch(Device& dev, size_t bytes) : dev_(dev) {
    ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    check_ze(ze().zeMemAllocDevice(dev.context, &desc, bytes ? bytes : 4, 64, dev.handle, &ptr_),
             "zeMemAllocDevice (scratch)");
  }
  ~DeviceScratch() { ze().zeMemFree(dev_.context, ptr_); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  void* ptr() const { return ptr_; }

 private:
  Device& dev_;
  void* ptr_ = nullptr;
};

void append_copy(Device& dev, Stream* s, void* dst, const void* src, size_t bytes) {
  s->submit(dev, [&](ze_command_list_handle_t list) {
    check_ze(ze().zeCommandListAppendMemoryCopy(list, dst, src, bytes, nullptr, 0, nullptr),
             "zeCommandListAppendMemoryCopy");
  });
}

// cross_entropy(+backward) and embedding(+backward): indices come from
// device memory, so the kernel records the first out-of-range row in a
// flag that is read back here (the call waits for its kernel).
void launch_indexed_body(Device& dev, const polychip_kernel_args& a, DeviceScratch& flag);

void launch_indexed(Device& dev, const polychip_kernel_args& a) {
  DeviceScratch flag(dev, 4);
  try {
    launch_indexed_body(dev, a, flag);
  } catch (...) {
    // Copies into the scratch may still be queued: drain before freeing.
    try {
      as_stream(a.stream)->synchronize();
    } catch (const Failure&) {
    }
    throw;
  }
}

void launch_indexed_body(Device& dev, const polychip_kernel_args& a, DeviceScratch& flag) {
  std::string_view op = a.op;
  const polychip_tensor* t = a.tensors;
  Stream* s = as_stream(a.stream);
  const int32_t bad_init = INT32_MAX;
  append_copy(dev, s, flag.ptr(), &bad_init, 4);
  int64_t limit = 0;
  const char* what = "ids";
  if (op == "cross_entropy" || op == "cross_entropy_backward") {
    int64_t n = t[0].shape[0], c = t[0].shape[1];
    limit = c;
    what = "targets";
    bool bw = op == "cross_entropy_backward";
    ZeLaunch l(dev, a, "loss", t[0].dtype,
               bw ? "pc_cross_entropy_backward_kernel" : "pc_cross_entropy_kernel");
    l.arg(n).arg(c).ptr(0).ptr(1).arg(int32_t{t[1].dtype == POLYCHIP_DTYPE_I64}).ptr(2);
    if (bw) l.ptr(3);
    l.arg(flag.ptr()).run1d(static_cast<uint64_t>(n));
  } else if (op == "embedding") {
    int64_t n = t[0].shape[0], v = t[1].shape[0], d = t[1].shape[1];
    limit = v;
    ZeLaunch(dev, a, "embedding", t[1].dtype, "pc_embedding_kernel")
        .arg(n)
        .arg(v)
        .arg(d)
        .ptr(0)
        .arg(int32_t{t[0].dtype == POLYCHIP_DTYPE_I64})
        .ptr(1)
        .ptr(2)
        .arg(flag.ptr())
        .run1d(static_cast<uint64_t>(n * d));
  } else {
    int64_t n = t[0].shape[0], v = t[2].shape[0], d = t[2].shape[1];
    limit = v;
    // A zeroed accumulator of ACC: double for f64, float otherwise.
    size_t acc_size = t[2].dtype == POLYCHIP_DTYPE_F64 ? 8 : 4;
    std::vector<unsigned char> zeros(static_cast<size_t>(v * d) * acc_size, 0);
    DeviceScratch acc(dev, zeros.size());
    append_copy(dev, s, acc.ptr(), zeros.data(), zeros.size());
    ZeLaunch(dev, a, "embedding", t[2].dtype, "pc_embedding_backward_kernel")
        .arg(n)
        .arg(v)
        .arg(d)
        .ptr(0)
        .arg(int32_t{t[0].dtype == POLYCHIP_DTYPE_I64})
        .ptr(1)
        .arg(acc.ptr())
        .ptr(2)
        .arg(flag.ptr())
        .run1d(static_cast<uint64_t>(d));
    s->synchronize();  // before `zeros` and `acc` go away
  }
  int32_t bad = 0;
  append_copy(dev, s, &bad, flag.ptr(), 4);
  s->synchronize();
  if (bad != INT32_MAX)
    fail(POLYCHIP_INVALID_ARGUMENT,
         fmt::format("{}: {}[{}] is outside [0, {})", op, what, bad, limit));
}

void launch(Device& dev, const polychip_kernel_args& a) {
  std::string_view op = a.op;
  const polychip_tensor* t = a.tensors;
  const polychip_dtype dt = t[0].dtype;
  const auto& attrs = *a.attrs;
  const OpSpec* spec = find_op(op);
  std::string_view family = spec->family;
  if (op == "gemm") {
    const int o = t[0].rank - 2;
    const bool ta = attrs.ints[attr::kTransA] != 0, tb = attrs.ints[attr::kTransB] != 0;
    const int64_t batch = o ? t[0].shape[0] : 1, m = t[3].shape[o], n = t[3].shape[o + 1];
    const int64_t k = ta ? t[0].shape[o] : t[0].shape[o + 1];
    const double beta = attrs.floats[attr::kBeta];
    if (batch == 0 || m == 0 || n == 0) return;
    LaunchGeometry g;
    std::string error;
    if (!geometry_gemm_tiled(m, n, batch, dev.max_group_count, &g, &error))
      fail(POLYCHIP_INVALID_ARGUMENT, error);
    // y may be a or b (an exact alias is legal): compute into scratch then,
    // since other work-groups still read the inputs.
    const bool alias = overlaps(t[3], t[0]) || overlaps(t[3], t[1]);
    const size_t y_bytes = static_cast<size_t>(numel(t[3])) * dtype_size(static_cast<DType>(dt));
    void* scratch = nullptr;
    if (alias) {
      ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
      check_ze(ze().zeMemAllocDevice(dev.context, &desc, y_bytes, 64, dev.handle, &scratch),
               "zeMemAllocDevice (gemm scratch)");
    }
    try {
      {
        ZeLaunch l(dev, a, "gemm", dt, "pc_gemm_tiled");
        l.arg(m).arg(n).arg(k).arg(int32_t{ta}).arg(int32_t{tb});
        with_acc(dt, attrs.floats[attr::kAlpha], [&](auto v) { l.arg(v); });
        with_acc(dt, beta, [&](auto v) { l.arg(v); });
        int64_t zero = 0;
        l.ptr(0).arg(zero).ptr(1).arg(zero).ptr(beta != 0 ? 2 : 3).arg(zero);
        if (alias)
          l.arg(scratch);
        else
          l.ptr(3);
        l.arg(zero).run(g);
      }
      if (alias) {
        Stream* s = as_stream(a.stream);
        void* y = tensor_ptr(a, 3);
        s->submit(dev, [&](ze_command_list_handle_t list) {
          check_ze(
              ze().zeCommandListAppendMemoryCopy(list, y, scratch, y_bytes, nullptr, 0, nullptr),
              "zeCommandListAppendMemoryCopy (gemm output)");
        });
        s->synchronize();  // the scratch is freed below
      }
    } catch (...) {
      if (scratch) ze().zeMemFree(dev.context, scratch);
      throw;
    }
    if (scratch) check_ze(ze().zeMemFree(dev.context, scratch), "zeMemFree (gemm scratch)");
  } else if (family == "elementwise" && spec->tensors.size() == 2 && op != "copy" &&
             op != "cast") {  // unary
    Layout lay = make_layout(a, {0, 1});
    ZeLaunch(dev, a, "elementwise", dt, "pc_unary_kernel")
        .arg(lay)
        .arg(int32_t{code_of(op, attrs)})
        .ptr(0)
        .ptr(1)
        .run1d(static_cast<uint64_t>(lay.numel));
  } else if (family == "elementwise" && spec->tensors.size() == 3) {  // binary, backward
    Layout lay = make_layout(a, {0, 1, 2});
    bool binary = spec->tensors[0].name == std::string_view("a");
    ZeLaunch(dev, a, "elementwise", dt, binary ? "pc_binary_kernel" : "pc_unary_backward_kernel")
        .arg(lay)
        .arg(int32_t{code_of(op, attrs)})
        .ptr(0)
        .ptr(1)
        .ptr(2)
        .run1d(static_cast<uint64_t>(lay.numel));
  } else if (family == "reduction" && op != "argmax") {
    Layout lay = make_layout(a, {0, 1});
    int64_t axis = attrs.ints[attr::kAxis];
    if (axis < 0) axis += t[0].rank;
    int64_t num_out = numel(t[1]);
    ZeLaunch(dev, a, "reduction", dt, "pc_reduce_kernel")
        .arg(lay)
        .arg(static_cast<int32_t>(axis))
        .arg(int32_t{code_of(op, attrs)})
        .arg(num_out)
        .ptr(0)
        .ptr(1)
        .run1d(static_cast<uint64_t>(num_out));
  } else if (op == "softmax" || op == "log_softmax") {
    int64_t axis = attrs.ints[attr::kAxis];
    if (axis < 0) axis += t[0].rank;
    int64_t outer = 1, len = 1, inner = 1;
    for (int d = 0; d < t[0].rank; ++d)
      (d < axis ? outer : d == axis ? len : inner) *= t[0].shape[d];
    ZeLaunch(dev, a, "softmax", dt, "pc_softmax_kernel")
        .arg(outer)
        .arg(len)
        .arg(inner)
        .arg(int32_t{op == "log_softmax"})
        .ptr(0)
        .ptr(1)
        .run1d(static_cast<uint64_t>(len ? outer * inner : 0));
  } else if (op == "layernorm" || op == "rmsnorm") {
    int64_t n = t[0].shape[0], d = t[0].shape[1];
    bool ln = op == "layernorm";
    ZeLaunch l(dev, a, "norm", dt, ln ? "pc_layernorm_kernel" : "pc_rmsnorm_kernel");
    l.arg(n).arg(d);
    with_acc(dt, attrs.floats[attr::kEps], [&](auto v) { l.arg(v); });
    for (int k = 0; k < (ln ? 6 : 4); ++k) l.ptr(k);
    l.run1d(static_cast<uint64_t>(n));
  } else if (op == "attention") {
    int64_t rows = t[0].shape[0] * t[0].shape[1] * t[0].shape[2];
    if (t[0].shape[3] > 256)
      fail(POLYCHIP_UNSUPPORTED,
           fmt::format("attention: head dimension {} exceeds 256", t[0].shape[3]));
    ZeLaunch l(dev, a, "attention", dt, "pc_attention_kernel");
    l.arg(rows).arg(t[0].shape[2]).arg(t[0].shape[3]);
    with_acc(dt, attrs.floats[attr::kScale], [&](auto v) { l.arg(v); });
    l.arg(int32_t{attrs.ints[attr::kCausal] != 0});
    for (int k = 0; k < 5; ++k) l.ptr(k);
    l.run1d(static_cast<uint64_t>(rows));
  } else if (op == "cast") {
    // Built with fp64 (the f64 module family): every value through double.
    Layout lay = make_layout(a, {0, 1});
    ZeLaunch(dev, a, "cast", POLYCHIP_DTYPE_F64, "pc_cast_kernel")
        .arg(lay)
        .arg(static_cast<int32_t>(t[0].dtype))
        .arg(static_cast<int32_t>(t[1].dtype))
        .ptr(0)
        .ptr(1)
        .run1d(static_cast<uint64_t>(lay.numel));
  } else if (op == "fill" || op == "copy") {
    size_t es = dtype_size(static_cast<DType>(t[0].dtype));
    const char* suffix = es == 8 ? "u64" : es == 4 ? "u32" : "u16";
    Layout lay = op == "fill" ? make_layout(a, {0}) : make_layout(a, {0, 1});
    ZeLaunch l(dev, a, "elementwise", POLYCHIP_DTYPE_F32,
               fmt::format("pc_{}_{}", op, suffix).c_str());
    l.arg(lay).ptr(0);
    if (op == "fill") {
      uint64_t bits = 0;  // the value rounded once on the host, as raw bits
      store_from_f64(attrs.floats[attr::kFillValue], &bits, static_cast<DType>(dt));
      if (es == 8)
        l.arg(bits);
      else if (es == 4)
        l.arg(static_cast<uint32_t>(bits));
      else
        l.arg(static_cast<uint16_t>(bits));
    } else {
      l.ptr(1);
    }
    l.run1d(static_cast<uint64_t>(lay.numel));
  } else if (op == "argmax") {
    Layout lay = make_layout(a, {0, 1});
    int64_t axis = attrs.ints[attr::kAxis];
    if (axis < 0) axis += t[0].rank;
    int64_t num_out = numel(t[1]);
    ZeLaunch(dev, a, "reduction", dt, "pc_argmax_kernel")
        .arg(lay)
        .arg(static_cast<int32_t>(axis))
        .arg(num_out)
        .ptr(0)
        .ptr(1)
        .arg(int32_t{t[1].dtype == POLYCHIP_DTYPE_I64})
        .run1d(static_cast<uint64_t>(num_out));
  } else if (op == "softmax_backward" || op == "log_softmax_backward") {
    int64_t axis = attrs.ints[attr::kAxis];
    if (axis < 0) axis += t[1].rank;
    int64_t outer = 1, len = 1, inner = 1;
    for (int d = 0; d < t[1].rank; ++d)
      (d < axis ? outer : d == axis ? len : inner) *= t[1].shape[d];
    ZeLaunch(dev, a, "softmax", t[1].dtype, "pc_softmax_backward_kernel")
        .arg(outer)
        .arg(len)
        .arg(inner)
        .arg(int32_t{op == "log_softmax_backward"})
        .ptr(0)
        .ptr(1)
        .ptr(2)
        .run1d(static_cast<uint64_t>(len ? outer * inner : 0));
  } else if (op == "layernorm_backward" || op == "rmsnorm_backward") {
    const polychip_dtype xt = t[1].dtype;
    int64_t n = t[1].shape[0], d = t[1].shape[1];
    bool ln = op == "layernorm_backward";
    {
      ZeLaunch l(dev, a, "norm", xt,
                 ln ? "pc_layernorm_backward_dx_kernel" : "pc_rmsnorm_backward_dx_kernel");
      l.arg(n).arg(d);
      for (int k = 0; k < (ln ? 6 : 5); ++k) l.ptr(k);
      l.run1d(static_cast<uint64_t>(n));
    }
    ZeLaunch l(dev, a, "norm", xt,
               ln ? "pc_layernorm_backward_params_kernel" : "pc_rmsnorm_backward_dgamma_kernel");
    l.arg(n).arg(d);
    static constexpr int kLayernormArgs[] = {0, 1, 3, 4, 6, 7};
    static constexpr int kRmsnormArgs[] = {0, 1, 3, 5};
    for (int k : ln ? std::span<const int>(kLayernormArgs) : std::span<const int>(kRmsnormArgs))
      l.ptr(k);
    l.run1d(static_cast<uint64_t>(d));
  } else if (op == "rotary_embedding") {
    int64_t s = t[0].shape[0], h = t[0].shape[1], d = t[0].shape[2];
    ZeLaunch(dev, a, "elementwise", dt, "pc_rotary_kernel")
        .arg(s)
        .arg(h)
        .arg(d)
        .ptr(0)
        .ptr(1)
        .ptr(2)
        .ptr(3)
        .arg(attrs.ints[attr::kInverse] ? -1.0f : 1.0f)
        .run1d(static_cast<uint64_t>(s * h * (d / 2)));
  } else if (op == "attention_backward") {
    const polychip_dtype qt = t[1].dtype;
    int64_t rows = t[1].shape[0] * t[1].shape[1] * t[1].shape[2];
    if (t[1].shape[3] > 256)
      fail(POLYCHIP_UNSUPPORTED,
           fmt::format("attention_backward: head dimension {} exceeds 256", t[1].shape[3]));
    for (const char* kernel :
         {"pc_attention_backward_dq_kernel", "pc_attention_backward_dkdv_kernel"}) {
      bool dq = std::string_view(kernel) == "pc_attention_backward_dq_kernel";
      ZeLaunch l(dev, a, "attention", qt, kernel);
      l.arg(rows).arg(t[1].shape[2]).arg(t[1].shape[3]);
      with_acc(qt, attrs.floats[attr::kScale], [&](auto v) { l.arg(v); });
      l.arg(int32_t{attrs.ints[attr::kCausal] != 0});
      for (int k = 0; k < 6; ++k) l.ptr(k);
      if (dq)
        l.ptr(6);
      else
        l.ptr(7).ptr(8);
      l.run1d(static_cast<uint64_t>(rows));
    }
  } else if (op == "adamw") {
    int64_t n = numel(t[0]);
    double beta1 = attrs.floats[attr::kBeta1], beta2 = attrs.floats[attr::kBeta2];
    double step = static_cast<double>(attrs.ints[attr::kStep]);
    ZeLaunch l(dev, a, "elementwise", t[1].dtype, "pc_adamw_kernel");
    l.arg(n);
    for (int k = 0; k < 7; ++k) l.ptr(k);
    // WACC: double in the f64 modules (built with fp64), float otherwise.
    for (double v : {attrs.floats[attr::kLr], beta1, beta2, attrs.floats[attr::kAdamEps],
                     attrs.floats[attr::kWeightDecay], 1.0 - std::pow(beta1, step),
                     1.0 - std::pow(beta2, step)})
      with_acc(t[1].dtype, v, [&](auto x) { l.arg(x); });
    l.run1d(static_cast<uint64_t>(n));
  } else if (op == "cross_entropy" || op == "cross_entropy_backward" || op == "embedding" ||
             op == "embedding_backward") {
    launch_indexed(dev, a);
  } else {
    fail(POLYCHIP_NOT_FOUND, fmt::format("the level_zero adapter has no kernel for '{}'", op));
  }
}

polychip_status run_kernel(const polychip_kernel_args* args) {
  const char* op = args && args->op ? args->op : "?";
  return errors().guarded_kernel(op, [&] {
    if (!args || !args->stream || !args->attrs)
      fail(POLYCHIP_INVALID_ARGUMENT, "kernel args, 'stream' and 'attrs' must be set");
    const OpSpec& spec = opencl_family::require_contract_op(op);
    if (args->num_tensors < 0 || (args->num_tensors > 0 && !args->tensors))
      fail(POLYCHIP_INVALID_ARGUMENT, "bad tensor list");
    opencl_family::check_contract_call(spec, *args,
                                       [](polychip_memory* m) { return as_memory(m)->size; });
    if (as_stream(args->stream)->device() != args->device)
      fail(POLYCHIP_INVALID_ARGUMENT, "the stream belongs to another device");
    launch(device_at(args->device), *args);
  });
}

// Every op has a launcher (launch() above), but only in a build with
// SPIR-V: without clang-14/llvm-spirv-14 there are no kernels.
bool has_launcher(std::string_view) { return !embedded_spirv("gemm/2").empty(); }

}  // namespace

// Every op, for f32, f16 and bf16; f64 and cast (which rounds through
// double) where the device has fp64.
const std::vector<polychip_kernel_entry>& kernel_entries(Device& device) {
  return opencl_family::contract_kernel_table(&device, device.has_fp64, has_launcher, run_kernel);
}

}  // namespace polychip::level_zero
