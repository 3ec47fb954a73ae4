#include "mutant_kernel.hpp"

#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_adapter.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/tensor.hpp"
#include "precision/harness/value_generator.hpp"
#include "strided_loop.hpp"

namespace polychip::precision {
namespace {

std::atomic<const Mutant*> g_active{nullptr};

DType dtype_of(const polychip_tensor& t) { return static_cast<DType>(t.dtype); }

cpu::TensorView view_of(const polychip_tensor& t) { return cpu::make_view(t, cpu::tensor_data(t)); }

// Calls f(address) for every element of t, in row-major logical order.
template <class F>
void for_each_element(const polychip_tensor& t, F&& f) {
  const cpu::TensorView v = view_of(t);
  const auto size = static_cast<int64_t>(dtype_size(v.dtype));
  cpu::for_each_element([&](const std::array<int64_t, 1>& offset) { f(v.data + offset[0] * size); },
                        v);
}

// Applies value -> g(value) to every element of a floating tensor.
template <class G>
void map_floating(const polychip_tensor& t, G&& g) {
  const DType dt = dtype_of(t);
  if (!is_floating(dt)) return;
  for_each_element(t, [&](char* p) { store_from_f64(g(load_as_f64(p, dt)), p, dt); });
}

double round_to_bits(double v, int bits) {
  if (!std::isfinite(v) || v == 0) return v;
  const int e = std::ilogb(v);
  return std::ldexp(std::nearbyint(std::ldexp(v, bits - 1 - e)), e - bits + 1);
}

double flushed(double v, DType dt) {
  return std::fabs(v) < float_format(dt).min_normal() ? std::copysign(0.0, v) : v;
}

void wrap_to_int16(const polychip_tensor& t) {
  const DType dt = dtype_of(t);
  for_each_element(t, [&](char* p) {
    const auto v = static_cast<int64_t>(load_as_f64(p, dt));
    store_from_f64(static_cast<double>(static_cast<int16_t>(v)), p, dt);
  });
}

void make_dense(polychip_tensor& t) {
  const Shape strides = row_major_strides(Shape(t.shape, t.shape + t.rank));
  std::copy(strides.begin(), strides.end(), t.strides);
}

bool has_broadcast(const polychip_tensor& t) {
  for (int d = 0; d < t.rank; ++d)
    if (t.shape[d] > 1 && t.strides[d] == 0) return true;
  return false;
}

// The length of the lines a row op reduces: input 0 along the axis
// attribute where the op has one, along its last dimension otherwise.
int64_t line_length(const OpSpec& spec, const polychip_tensor& x, const polychip_op_attrs& attrs) {
  int axis = x.rank - 1;
  for (const AttrSpec& a : spec.attrs)
    if (a.name == std::string_view("axis")) {
      const auto given = static_cast<int>(attrs.ints[a.slot]);
      axis = given < 0 ? given + x.rank : given;
    }
  return axis >= 0 && axis < x.rank ? x.shape[axis] : 0;
}

// The bytes of a tensor's elements, saved before an input is mutated in
// place and put back after the call.
struct SavedInput {
  polychip_tensor tensor;
  std::vector<char> bytes;
};

SavedInput save(const polychip_tensor& t) {
  SavedInput s{t, {}};
  const size_t size = dtype_size(dtype_of(t));
  for_each_element(t, [&](char* p) { s.bytes.insert(s.bytes.end(), p, p + size); });
  return s;
}

void restore(const SavedInput& s) {
  const size_t size = dtype_size(dtype_of(s.tensor));
  size_t at = 0;
  for_each_element(s.tensor, [&](char* p) {
    std::memcpy(p, s.bytes.data() + at, size);
    at += size;
  });
}

polychip_status mutant_kernel(const polychip_kernel_args* a) {
  const Mutant* m = g_active.load();
  const OpSpec* spec = a && a->op ? find_op(a->op) : nullptr;
  if (!m || !spec || a->num_tensors != static_cast<int32_t>(spec->tensors.size()))
    return POLYCHIP_INTERNAL;
  const size_t inputs = spec->num_inputs(), count = spec->tensors.size();
  std::array<polychip_tensor, POLYCHIP_MAX_OP_TENSORS> tensors{};
  std::copy(a->tensors, a->tensors + count, tensors.begin());
  polychip_op_attrs attrs = *a->attrs;
  polychip_kernel_args args = *a;
  args.tensors = tensors.data();
  args.attrs = &attrs;

  std::vector<SavedInput> saved;
  for (size_t k = 0; k < inputs; ++k) {
    polychip_tensor& t = tensors[k];
    switch (m->misreading) {
      case Misreading::kStridedReadAsContiguous:
        if (!has_broadcast(t) && !view_of(t).is_row_major()) make_dense(t);
        break;
      case Misreading::kBroadcastReadAsContiguous:
        if (has_broadcast(t)) make_dense(t);
        break;
      case Misreading::kSubnormalsFlushed:
        if (!is_floating(dtype_of(t))) break;
        saved.push_back(save(t));
        map_floating(t, [&](double v) { return flushed(v, dtype_of(t)); });
        break;
      case Misreading::kIndexInSixteenBits:
        if (spec->tensors[k].dtype_role != DTypeRole::kIndex) break;
        saved.push_back(save(t));
        wrap_to_int16(t);
        break;
      default:
        break;
    }
  }
  if (m->misreading == Misreading::kAttributeAtDefault) {
    const AttrSpec& attr = spec->attrs.at(static_cast<size_t>(m->attr));
    if (attr.is_float)
      attrs.floats[attr.slot] = attr.default_value;
    else
      attrs.ints[attr.slot] = static_cast<int64_t>(attr.default_value);
  }
  // A misread attribute can make the shapes inconsistent (trans_a ignored on
  // a non-square a): the kernel refuses such a call, as a real one would
  // fail it, rather than reading past a tensor.
  if (!validate_call(*spec, OpCall{{tensors.data(), count}, &attrs}).empty())
    return POLYCHIP_INVALID_ARGUMENT;
  const int64_t line = inputs > 0 ? line_length(*spec, tensors[0], attrs) : 0;
  const polychip_status status = cpu::kernel_entries().front().fn(&args);
  for (const SavedInput& s : saved) restore(s);
  if (status != POLYCHIP_OK) return status;

  for (size_t k = inputs; k < count; ++k) {
    const polychip_tensor& t = a->tensors[k];
    const DType dt = dtype_of(t);
    switch (m->misreading) {
      case Misreading::kOutputAtLowerPrecision:
        map_floating(t, [&](double v) { return round_to_bits(v, lower_precision_bits(dt)); });
        break;
      case Misreading::kLongRowsAtLowerPrecision:
        if (line > 4096)
          map_floating(t, [&](double v) { return round_to_bits(v, lower_precision_bits(dt)); });
        break;
      case Misreading::kSubnormalsFlushed:
        map_floating(t, [&](double v) { return flushed(v, dt); });
        break;
      case Misreading::kNanNotPropagated:
        map_floating(t, [](double v) { return std::isnan(v) ? 0.0 : v; });
        break;
      case Misreading::kIndexInSixteenBits:
        if (!is_floating(dt)) wrap_to_int16(t);
        break;
      case Misreading::kVectorTailZeroed: {
        int64_t n = 0;
        char* last = nullptr;
        for_each_element(t, [&](char* p) {
          last = p;
          ++n;
        });
        if (last && n % 32 != 0) store_from_f64(0.0, last, dt);
        break;
      }
      default:
        break;
    }
  }
  return POLYCHIP_OK;
}

}  // namespace

MutantChip::MutantChip(Dispatcher& dispatcher, std::string_view device_type, const Mutant& mutant)
    : dispatcher_(dispatcher) {
  const Mutant* none = nullptr;
  if (!g_active.compare_exchange_strong(none, &mutant))
    throw_error(StatusCode::kFailedPrecondition, "a mutant chip is already installed");
  try {
    patch_id_ = dispatcher_.patch(device_type, mutant.op, std::nullopt, &mutant_kernel,
                                  "mutant: " + mutant.name());
  } catch (...) {
    g_active.store(nullptr);
    throw;
  }
}

MutantChip::~MutantChip() {
  dispatcher_.restore(patch_id_);
  g_active.store(nullptr);
}

}  // namespace polychip::precision
