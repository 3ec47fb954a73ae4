#include "sim_defects.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "f16_row_precision.hpp"
#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::sim {
namespace {

uint64_t element_size(const cpu::TensorView& v) { return dtype_size(v.dtype); }

// Byte distance from element [0,..,0] to one past the last element.
int64_t extent_bytes(const cpu::TensorView& v) {
  if (v.numel() == 0) return 0;
  int64_t last = 0;
  for (int d = 0; d < v.rank; ++d) last += (v.shape[d] - 1) * v.strides[d];
  return (last + 1) * static_cast<int64_t>(element_size(v));
}

// A copy of the bytes a contiguous kernel would read from `v`'s start: as
// many elements as `v` has, zeros where that runs past its memory.
cpu::TensorView read_as_contiguous(const cpu::TensorView& v, const char* memory_end,
                                   std::vector<char>& storage) {
  const size_t bytes = static_cast<size_t>(v.numel()) * element_size(v);
  storage.assign(bytes, 0);
  const size_t available = memory_end && memory_end > v.data
                               ? std::min<size_t>(bytes, static_cast<size_t>(memory_end - v.data))
                               : 0;
  std::memcpy(storage.data(), v.data, available);
  cpu::TensorView c = v;
  c.data = storage.data();
  int64_t stride = 1;
  for (int d = v.rank - 1; d >= 0; --d) {
    c.strides[d] = stride;
    stride *= v.shape[d];
  }
  return c;
}

bool has_zero_stride(const cpu::TensorView& v) {
  for (int d = 0; d < v.rank; ++d)
    if (v.strides[d] == 0 && v.shape[d] > 1) return true;
  return false;
}

// Runs the op with inputs matching `misread` replaced by what a kernel that
// assumes contiguous inputs reads.
template <class Pred>
polychip_status run_reading_as_contiguous(const cpu::KernelCall& call,
                                          std::span<char* const> memory_end, Pred misread) {
  std::vector<cpu::TensorView> views(call.tensors.begin(), call.tensors.end());
  std::vector<std::vector<char>> storage(views.size());
  const OpSpec* op = find_op(call.op);
  for (size_t k = 0; op && k < views.size() && k < op->tensors.size(); ++k)
    if (!op->tensors[k].is_output && misread(views[k]))
      views[k] = read_as_contiguous(views[k], memory_end[k], storage[k]);
  return cpu::run_kernel({call.op, views, call.attrs, call.numerics});
}

// softmax rows longer than 4096 normalized by a row sum accumulated in f16
// (the running sum stalls once its spacing exceeds the terms).
void round_long_row_sums(const cpu::KernelCall& call) {
  const cpu::TensorView &x = call[0], &y = call[1];
  const int64_t axis = call.i(attr::kAxis);
  if (x.rank == 0 || (axis != -1 && axis != x.rank - 1)) return;
  const int64_t len = x.shape[x.rank - 1];
  if (len <= 4096) return;
  const int64_t rows = x.numel() / len;
  const int64_t xs = x.strides[x.rank - 1], ys = y.strides[y.rank - 1];
  const uint64_t xe = element_size(x), ye = element_size(y);
  for (int64_t r = 0; r < rows; ++r) {
    // Row r's start: its index in the leading dimensions, row-major.
    int64_t xo = 0, yo = 0, rest = r;
    for (int d = x.rank - 2; d >= 0; --d) {
      xo += rest % x.shape[d] * x.strides[d];
      yo += rest % y.shape[d] * y.strides[d];
      rest /= x.shape[d];
    }
    auto xv = [&](int64_t j) { return load_as_f64(x.data + (xo + j * xs) * xe, x.dtype); };
    double max = -INFINITY, sum = 0, low = 0;
    for (int64_t j = 0; j < len; ++j) max = std::max(max, xv(j));
    for (int64_t j = 0; j < len; ++j) {
      const double e = std::exp(xv(j) - max);
      sum += e;
      uint16_t f16;  // the running sum rounded to f16 after every addition
      store_from_f64(low + e, &f16, DType::kF16);
      low = load_as_f64(&f16, DType::kF16);
    }
    const double factor = sum / low;  // y was normalized by sum, now by low
    for (int64_t j = 0; j < len; ++j) {
      char* p = y.data + (yo + j * ys) * ye;
      store_from_f64(load_as_f64(p, y.dtype) * factor, p, y.dtype);
    }
  }
}

// embedding_backward with repeated ids: the last row of dy wins.
void lose_repeated_updates(const cpu::KernelCall& call) {
  const cpu::TensorView &ids = call[0], &dy = call[1], &dw = call[2];
  const int64_t n = ids.shape[0], d = dw.shape[1];
  std::map<int64_t, std::pair<int, int64_t>> seen;  // id -> (count, last row)
  for (int64_t r = 0; r < n; ++r) {
    const auto id = static_cast<int64_t>(
        load_as_f64(ids.data + r * ids.strides[0] * element_size(ids), ids.dtype));
    auto& s = seen[id];
    s = {s.first + 1, r};
  }
  for (const auto& [id, s] : seen) {
    if (s.first < 2) continue;
    for (int64_t j = 0; j < d; ++j) {
      const char* from =
          dy.data + (s.second * dy.strides[0] + j * dy.strides[1]) * element_size(dy);
      char* to = dw.data + (id * dw.strides[0] + j * dw.strides[1]) * element_size(dw);
      store_from_f64(load_as_f64(from, dy.dtype), to, dw.dtype);
    }
  }
}

}  // namespace

polychip_status run_defective_kernel(const cpu::KernelCall& call, KernelDefect defect,
                                     std::span<char* const> memory_end) {
  const cpu::TensorView* out = call.tensors.empty() ? nullptr : &call.tensors.back();
  switch (defect) {
    case KernelDefect::kNone:
      break;
    case KernelDefect::kWritePastEnd: {
      const polychip_status st = cpu::run_kernel(call);
      char* past = out->data + extent_bytes(*out);
      const char* end = memory_end[call.tensors.size() - 1];
      if (st == POLYCHIP_OK && out->numel() > 0 && end && past + element_size(*out) <= end)
        std::memset(past, 0, element_size(*out));
      return st;
    }
    case KernelDefect::kNondeterministic: {
      // A per-process call count stands for the scheduling that changes
      // the summation order from run to run; every other call is off.
      static std::atomic<uint64_t> calls{0};
      const polychip_status st = cpu::run_kernel(call);
      if (st == POLYCHIP_OK && out->numel() > 0 && calls++ % 2 == 0) out->data[0] ^= 1;
      return st;
    }
    case KernelDefect::kVectorTailDropped: {
      // The tail of exactly 63 elements stores 62 of them: the last keeps
      // whatever the output held.
      const int64_t n = out->numel();
      if (n % 64 != 63 || !out->is_row_major()) break;
      const uint64_t es = element_size(*out);
      std::vector<char> kept(es);
      char* last = out->data + (n - 1) * static_cast<int64_t>(es);
      std::memcpy(kept.data(), last, es);
      const polychip_status st = cpu::run_kernel(call);
      std::memcpy(last, kept.data(), es);
      return st;
    }
    case KernelDefect::kLongRowLowPrecision: {
      const polychip_status st = cpu::run_kernel(call);
      if (st == POLYCHIP_OK) round_long_row_sums(call);
      return st;
    }
    case KernelDefect::kIgnoredEps: {
      polychip_op_attrs attrs = *call.attrs;
      attrs.floats[attr::kEps] = 1e-5;
      return cpu::run_kernel({call.op, call.tensors, &attrs, call.numerics});
    }
    case KernelDefect::kLostUpdates: {
      const polychip_status st = cpu::run_kernel(call);
      if (st == POLYCHIP_OK) lose_repeated_updates(call);
      return st;
    }
    case KernelDefect::kBroadcastAsContiguous:
      return run_reading_as_contiguous(call, memory_end, [](const cpu::TensorView& v) {
        return v.numel() > 1 && has_zero_stride(v);
      });
    case KernelDefect::kStridesIgnored:
      return run_reading_as_contiguous(call, memory_end, [](const cpu::TensorView& v) {
        return !v.is_row_major() && !has_zero_stride(v);
      });
    case KernelDefect::kF16RowPrecision:
      return run_at_f16_precision(call);
  }
  return cpu::run_kernel(call);
}

void apply_copy_defect(CopyDefect defect, char* dst, uint64_t bytes) {
  constexpr uint64_t kPage = 4096;
  if (defect == CopyDefect::kPartialPageTail && bytes > kPage && bytes % kPage != 0)
    dst[bytes - 1] = static_cast<char>(dst[bytes - 1] ^ 0x5A);
}

void apply_upload_defect(CopyDefect defect, char* base, uint64_t offset) {
  constexpr uint64_t kLine = 64;
  if (defect == CopyDefect::kUnalignedHeadLine)
    std::memset(base + offset / kLine * kLine, 0, offset % kLine);
}

}  // namespace polychip::sim
