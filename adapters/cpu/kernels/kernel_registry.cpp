#include "kernel_registry.hpp"

#include <new>
#include <string>
#include <unordered_map>

#include "kernel_error.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::cpu {
namespace {

const std::unordered_map<std::string_view, KernelImpl>& kernel_map() {
  static const auto map = [] {
    std::unordered_map<std::string_view, KernelImpl> m;
    for (auto list : {elementwise_kernels(), reduction_kernels(), gemm_kernels(), softmax_kernels(),
                      norm_kernels(), loss_kernels(), embedding_kernels(), rotary_kernels(),
                      attention_kernels(), optimizer_kernels()})
      for (const auto& k : list) m.emplace(k.op, k.impl);
    return m;
  }();
  return map;
}

// Appends every dtype assignment of op's tensors from position k on.
void expand_signatures(const OpSpec& op, size_t k, DType t, std::vector<polychip_dtype>& sig,
                       std::vector<std::vector<polychip_dtype>>& out) {
  if (k == op.tensors.size()) {
    out.push_back(sig);
    return;
  }
  auto with = [&](DType d) {
    sig.push_back(static_cast<polychip_dtype>(d));
    expand_signatures(op, k + 1, t, sig, out);
    sig.pop_back();
  };
  switch (op.tensors[k].dtype_role) {
    case DTypeRole::kT:
      with(t);
      break;
    case DTypeRole::kF32:
      with(DType::kF32);
      break;
    case DTypeRole::kIndex:
      with(DType::kI64);
      with(DType::kI32);
      break;
    case DTypeRole::kAnyFloat:
      for (DType d : op.dtypes) with(d);
      break;
  }
}

}  // namespace

KernelImpl find_kernel_impl(std::string_view op) {
  auto it = kernel_map().find(op);
  return it == kernel_map().end() ? nullptr : it->second;
}

polychip_status run_kernel(const KernelCall& call) {
  KernelImpl impl = call.op ? find_kernel_impl(call.op) : nullptr;
  if (!impl)
    return kernel_error(POLYCHIP_NOT_FOUND, std::string("no cpu kernel implements op '") +
                                                (call.op ? call.op : "(null)") + "'");
  try {
    return impl(call);
  } catch (const std::bad_alloc&) {
    return kernel_error(POLYCHIP_OUT_OF_MEMORY,
                        std::string(call.op) + ": out of host memory for scratch buffers");
  } catch (const std::exception& e) {
    return kernel_error(POLYCHIP_INTERNAL, std::string(call.op) + ": " + e.what());
  }
}

std::vector<polychip_kernel_entry> contract_kernel_entries(polychip_kernel_fn fn) {
  std::vector<polychip_kernel_entry> entries;
  for (const OpSpec& op : op_contract()) {
    if (!find_kernel_impl(op.name)) continue;
    std::vector<std::vector<polychip_dtype>> sigs;
    std::vector<polychip_dtype> sig;
    bool has_t = false;
    for (const auto& t : op.tensors) has_t |= t.dtype_role == DTypeRole::kT;
    if (has_t) {
      for (DType t : op.dtypes) expand_signatures(op, 0, t, sig, sigs);
    } else {
      expand_signatures(op, 0, DType::kF32, sig, sigs);
    }
    for (const auto& s : sigs) {
      polychip_kernel_entry e{};
      e.struct_size = sizeof e;
      e.op = op.name;
      e.num_dtypes = static_cast<int32_t>(std::min<size_t>(s.size(), POLYCHIP_MAX_SIGNATURE));
      for (int32_t k = 0; k < e.num_dtypes; ++k) e.signature[k] = s[k];
      e.fn = fn;
      entries.push_back(e);
    }
  }
  return entries;
}

}  // namespace polychip::cpu
