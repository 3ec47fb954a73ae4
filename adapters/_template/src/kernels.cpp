// Kernels. The template implements none itself: every entry of the cpu
// adapter's table is offered, and a call is forwarded to the cpu kernel
// with the tensors re-pointed at the cpu adapter's handles for the same
// bytes. Porting an op = putting your own entry (op, signature, fn) in
// g_own_kernels; it then wins over the forwarded cpu entry.
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "template_adapter.hpp"

namespace template_adapter {

namespace {

// Your kernels go here, e.g. {sizeof(polychip_kernel_entry), "add",
// {POLYCHIP_DTYPE_F32, POLYCHIP_DTYPE_F32, POLYCHIP_DTYPE_F32}, 3, my_add_f32}.
const std::vector<polychip_kernel_entry> g_own_kernels = {};

struct Table {
  std::vector<polychip_kernel_entry> entries;          // what we offer
  const polychip_kernel_entry* cpu_entries = nullptr;  // what we forward to
  int32_t cpu_count = 0;
};

bool signature_matches(const polychip_kernel_entry& e, const polychip_kernel_args& args) {
  if (args.op == nullptr || std::string_view(e.op) != args.op) return false;
  for (int32_t k = 0; k < e.num_dtypes && k < args.num_tensors; ++k)
    if (e.signature[k] != POLYCHIP_DTYPE_ANY && e.signature[k] != args.tensors[k].dtype)
      return false;
  return true;
}

polychip_status forward_to_cpu(const polychip_kernel_args* args);

polychip_status load_table(Table& t) {
  const polychip_adapter_api* cpu = cpu_adapter();
  polychip_kernel_table_args k{};
  k.struct_size = POLYCHIP_STRUCT_SIZE(polychip_kernel_table_args, num_entries);
  k.device = 0;
  if (polychip_status s = cpu->kernel_table(&k))
    return fail(s, std::string("kernel_table: ") + cpu->last_error_message());
  t.cpu_entries = k.entries;
  t.cpu_count = k.num_entries;
  t.entries = g_own_kernels;
  for (int32_t i = 0; i < k.num_entries; ++i) {
    polychip_kernel_entry e = k.entries[i];
    e.fn = forward_to_cpu;
    t.entries.push_back(e);
  }
  return POLYCHIP_OK;
}

Table& table() {
  static Table t;
  return t;
}

polychip_status forward_to_cpu(const polychip_kernel_args* args) {
  if (!args || !args->stream || (!args->tensors && args->num_tensors) || args->num_tensors < 0 ||
      args->num_tensors > POLYCHIP_MAX_OP_TENSORS)
    return fail(POLYCHIP_INVALID_ARGUMENT, "kernel: args, stream or tensors missing");
  const Table& t = table();
  const polychip_kernel_entry* target = nullptr;
  for (int32_t i = 0; i < t.cpu_count && !target; ++i)
    if (signature_matches(t.cpu_entries[i], *args)) target = &t.cpu_entries[i];
  if (!target)
    return fail(POLYCHIP_UNSUPPORTED, std::string("no kernel for ") + (args->op ? args->op : "?"));
  // Same tensors, but on the cpu adapter's handles, stream and table.
  polychip_tensor tensors[POLYCHIP_MAX_OP_TENSORS];
  for (int32_t k = 0; k < args->num_tensors; ++k) {
    tensors[k] = args->tensors[k];
    if (tensors[k].memory) tensors[k].memory = as_memory(tensors[k].memory)->cpu_memory;
  }
  polychip_kernel_args forwarded = *args;
  forwarded.device = 0;
  forwarded.stream = as_stream(args->stream)->cpu_stream;
  forwarded.tensors = tensors;
  forwarded.adapter = cpu_adapter();
  if (polychip_status s = target->fn(&forwarded))
    return fail(s, cpu_adapter()->last_error_message());
  return POLYCHIP_OK;
}

}  // namespace

polychip_status kernel_table(polychip_kernel_table_args* args) {
  if (!args) return fail(POLYCHIP_INVALID_ARGUMENT, "kernel_table: args is NULL");
  if (polychip_status s = check_device(args->device, "kernel_table")) return s;
  static std::once_flag once;
  static polychip_status loaded = POLYCHIP_OK;
  std::call_once(once, [] { loaded = load_table(table()); });
  if (loaded != POLYCHIP_OK)
    return fail(loaded, "kernel_table: the cpu kernel table is unavailable");
  args->entries = table().entries.data();
  args->num_entries = static_cast<int32_t>(table().entries.size());
  return POLYCHIP_OK;
}

}  // namespace template_adapter
