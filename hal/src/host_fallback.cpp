#include "host_fallback.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip {
namespace {

// Bytes [begin, end) a view touches within its memory.
std::pair<uint64_t, uint64_t> touched_bytes(const TensorView& t) {
  if (t.numel() == 0) return {t.byte_offset(), t.byte_offset()};
  uint64_t last = 0;
  for (int d = 0; d < t.rank(); ++d)
    last += static_cast<uint64_t>((t.shape()[d] - 1) * t.strides()[d]);
  return {t.byte_offset(), t.byte_offset() + (last + 1) * dtype_size(t.dtype())};
}

struct Staged {
  polychip_memory* device_memory = nullptr;
  uint64_t begin = 0, end = 0;
  bool written = false;
  std::vector<unsigned char> host;
  Buffer cpu;
};

}  // namespace

void run_on_host(const Device& cpu, polychip_kernel_fn cpu_kernel, const OpSpec& op,
                 std::span<const TensorView> tensors, const polychip_op_attrs& attrs,
                 const Stream& device_stream) {
  const polychip_adapter_api& dev_api = device_stream.device().api();
  std::vector<Staged> staged;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const auto& t = tensors[k];
    if (!t.memory()) continue;
    auto [b, e] = touched_bytes(t);
    auto it = std::find_if(staged.begin(), staged.end(),
                           [&](const Staged& s) { return s.device_memory == t.memory(); });
    if (it == staged.end()) {
      Staged s;
      s.device_memory = t.memory();
      s.begin = b;
      s.end = e;
      staged.push_back(std::move(s));
      it = staged.end() - 1;
    } else {
      it->begin = std::min(it->begin, b);
      it->end = std::max(it->end, e);
    }
    if (op.tensors[k].is_output) it->written = true;
  }
  device_stream.synchronize();
  for (auto& s : staged) {
    s.host.resize(s.end - s.begin);
    polychip_copy_args a{};
    a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_copy_args, stream);
    a.kind = POLYCHIP_COPY_DEVICE_TO_HOST;
    a.src_memory = s.device_memory;
    a.src_offset = s.begin;
    a.dst_host = s.host.data();
    a.size_bytes = s.end - s.begin;
    device_stream.device().check(dev_api.copy(&a), "copy (host fallback, in)");
    s.cpu = Buffer(cpu, s.end - s.begin);
    s.cpu.copy_from_host(s.host.data(), s.host.size());
  }
  std::vector<polychip_tensor> abi(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    abi[k] = tensors[k].to_abi();
    for (auto& s : staged)
      if (s.device_memory == tensors[k].memory()) {
        abi[k].memory = s.cpu.handle();
        abi[k].byte_offset -= s.begin;
      }
  }
  Stream cpu_stream(cpu);
  polychip_kernel_args args{};
  args.struct_size = POLYCHIP_STRUCT_SIZE(polychip_kernel_args, adapter);
  args.op = op.name;
  args.device = cpu.index();
  args.stream = cpu_stream.handle();
  args.tensors = abi.data();
  args.num_tensors = static_cast<int32_t>(abi.size());
  args.attrs = &attrs;
  args.adapter = &cpu.api();
  try {
    cpu.check(cpu_kernel(&args), op.name);
    cpu_stream.synchronize();
  } catch (const Error& e) {
    throw e.annotate(
        fmt::format("{} (host fallback for {})", op.name, device_stream.device().device_type()));
  }
  for (auto& s : staged) {
    if (!s.written) continue;
    s.cpu.copy_to_host(s.host.data(), s.host.size());
    polychip_copy_args a{};
    a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_copy_args, stream);
    a.kind = POLYCHIP_COPY_HOST_TO_DEVICE;
    a.src_host = s.host.data();
    a.dst_memory = s.device_memory;
    a.dst_offset = s.begin;
    a.size_bytes = s.host.size();
    device_stream.device().check(dev_api.copy(&a), "copy (host fallback, out)");
  }
}

}  // namespace polychip
