#include "host/kernel_table.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>

#include "polychip/op_contract.hpp"

namespace polychip::opencl_family {
namespace {

polychip_dtype signature_dtype(DTypeRole role, DType t) {
  switch (role) {
    case DTypeRole::kT:
      return static_cast<polychip_dtype>(t);
    case DTypeRole::kF32:
      return POLYCHIP_DTYPE_F32;
    default:
      return POLYCHIP_DTYPE_ANY;  // index (i32/i64) and cast's any-float
  }
}

std::vector<polychip_kernel_entry> build_entries(bool has_fp64, HasLauncher has_launcher,
                                                 polychip_kernel_fn entry) {
  std::vector<polychip_kernel_entry> entries;
  for (const OpSpec& op : op_contract()) {
    if (!has_launcher(op.name)) continue;
    if (std::string_view(op.name) == "cast") {
      if (!has_fp64) continue;
      polychip_kernel_entry e{};
      e.struct_size = sizeof e;
      e.op = op.name;
      e.num_dtypes = 0;  // any pair of the contract's float dtypes
      e.fn = entry;
      entries.push_back(e);
      continue;
    }
    for (DType t : op.dtypes) {
      if (t == DType::kF64 && !has_fp64) continue;
      polychip_kernel_entry e{};
      e.struct_size = sizeof e;
      e.op = op.name;
      e.num_dtypes =
          static_cast<int32_t>(std::min<size_t>(op.tensors.size(), POLYCHIP_MAX_SIGNATURE));
      for (int k = 0; k < e.num_dtypes; ++k)
        e.signature[k] = signature_dtype(op.tensors[k].dtype_role, t);
      e.fn = entry;
      entries.push_back(e);
    }
  }
  return entries;
}

}  // namespace

const std::vector<polychip_kernel_entry>& contract_kernel_table(const void* device, bool has_fp64,
                                                                HasLauncher has_launcher,
                                                                polychip_kernel_fn entry) {
  static std::mutex mutex;
  static std::map<const void*, std::vector<polychip_kernel_entry>> tables;
  std::lock_guard lock(mutex);
  auto it = tables.find(device);
  if (it == tables.end())
    it = tables.emplace(device, build_entries(has_fp64, has_launcher, entry)).first;
  return it->second;
}

void answer_kernel_table(const std::vector<polychip_kernel_entry>& entries,
                         polychip_kernel_table_args* args) {
  args->entries = entries.data();
  args->num_entries = static_cast<int32_t>(entries.size());
}

}  // namespace polychip::opencl_family
