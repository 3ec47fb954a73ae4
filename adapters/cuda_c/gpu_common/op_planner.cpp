#include "op_planner.hpp"

#include <cmath>

#include <fmt/format.h>

#include "polychip/op_contract.hpp"
#include "tensor_desc.hpp"

namespace polychip::gpu {

namespace {

using ll = long long;

size_t accumulator_bytes(polychip_dtype t) { return t == POLYCHIP_DTYPE_F64 ? 8 : 4; }

int normalized_axis(const polychip_op_attrs* attrs, int rank) {
  int64_t axis = attrs->ints[attr::kAxis];
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

class Planner {
 public:
  explicit Planner(const OpRequest& r) : r_(r) { dtype_ = r.tensors[r.entry->dtype_tensor].dtype; }

  PlanResult run();

 private:
  const polychip_tensor& t(int k) const { return r_.tensors[k]; }
  uint64_t addr(int k) const { return r_.addresses[k]; }
  pc_tensor_desc desc(int k) const { return make_tensor_desc(t(k), addr(k)); }
  int index_is_64() const {
    return r_.entry->index_tensor >= 0 && t(r_.entry->index_tensor).dtype == POLYCHIP_DTYPE_I64;
  }
  int64_t i(int slot) const { return r_.attrs->ints[slot]; }
  double f(int slot) const { return r_.attrs->floats[slot]; }

  // Appends a launch of kernel number `which` of the op's family.
  KernelParams& launch(size_t which, LaunchGeometry g) {
    auto symbols = kernel_symbols(*r_.entry, dtype_);
    auto l = std::make_unique<KernelLaunch>();
    l->symbol = symbols.at(which);
    l->geometry = g;
    result_.plan.launches.push_back(std::move(l));
    return result_.plan.launches.back()->params;
  }
  void fail(polychip_status s, std::string message) {
    result_.status = s;
    result_.message = std::move(message);
  }

  void elementwise();
  void reduction();
  void softmax();
  void norm();
  void loss();
  void embedding();
  void rotary();
  void attention();
  void adamw();
  void gemm();

  const OpRequest& r_;
  polychip_dtype dtype_;
  PlanResult result_;
};

void Planner::elementwise() {
  const auto& e = *r_.entry;
  const ll n = element_count(t(static_cast<int>(r_.tensors.size()) - 1));
  const LaunchGeometry g = elementwise_geometry(n);
  const int approximate = static_cast<int>(i(attr::kGeluApproximate));
  switch (e.family) {
    case Family::kUnary:
      launch(0, g).add(desc(0), desc(1), n, e.opcode, approximate);
      break;
    case Family::kUnaryBackward:
      launch(0, g).add(desc(0), desc(1), desc(2), n, e.opcode, approximate);
      break;
    case Family::kBinary:
      launch(0, g).add(desc(0), desc(1), desc(2), n, e.opcode);
      break;
    case Family::kFill:
      launch(0, g).add(desc(0), n, f(attr::kFillValue));
      break;
    case Family::kCast:
      launch(0, g).add(desc(0), static_cast<int>(t(0).dtype), desc(1), static_cast<int>(t(1).dtype),
                       n);
      break;
    default:
      break;
  }
}

void Planner::reduction() {
  const int axis = normalized_axis(r_.attrs, t(0).rank);
  const ll rows = element_count(t(1));
  auto& p = launch(0, row_geometry(rows)).add(desc(0), desc(1), rows, axis);
  if (r_.entry->family == Family::kArgmax)
    p.add(index_is_64());
  else
    p.add(r_.entry->opcode);
}

void Planner::softmax() {
  const auto& x = t(0);
  const int axis = normalized_axis(r_.attrs, x.rank);
  ll outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = axis + 1; d < x.rank; ++d) inner *= x.shape[d];
  const ll len = x.shape[axis], rows = outer * inner;
  const LaunchGeometry g = len == 0 ? row_geometry(0) : row_geometry(rows);
  if (r_.entry->family == Family::kSoftmax)
    launch(0, g).add(addr(0), addr(1), rows, len, inner, r_.entry->opcode);
  else
    launch(0, g).add(addr(0), addr(1), addr(2), rows, len, inner, r_.entry->opcode);
}

void Planner::norm() {
  const int is_rms = r_.entry->opcode;
  if (r_.entry->family == Family::kNorm) {
    const ll rows = t(0).shape[0], d = t(0).shape[1];
    // layernorm: x gamma beta | y mean rstd; rmsnorm: x gamma | y rstd.
    const uint64_t beta = is_rms ? 0 : addr(2), y = is_rms ? addr(2) : addr(3);
    const uint64_t mean = is_rms ? 0 : addr(4), rstd = is_rms ? addr(3) : addr(5);
    launch(0, row_geometry(rows))
        .add(addr(0), addr(1), beta, y, mean, rstd, rows, d, f(attr::kEps), is_rms);
    return;
  }
  // layernorm_backward: dy x gamma mean rstd | dx dgamma dbeta;
  // rmsnorm_backward: dy x gamma rstd | dx dgamma.
  const ll rows = t(1).shape[0], d = t(1).shape[1];
  const uint64_t mean = is_rms ? 0 : addr(3), rstd = is_rms ? addr(3) : addr(4);
  const uint64_t dx = is_rms ? addr(4) : addr(5), dgamma = is_rms ? addr(5) : addr(6);
  const uint64_t dbeta = is_rms ? 0 : addr(7);
  launch(0, row_geometry(rows)).add(addr(0), addr(1), addr(2), mean, rstd, dx, rows, d, is_rms);
  launch(1, row_geometry(d)).add(addr(0), addr(1), mean, rstd, dgamma, dbeta, rows, d, is_rms);
}

void Planner::loss() {
  const ll rows = t(0).shape[0], classes = t(0).shape[1];
  result_.plan.checks_indices = rows > 0;
  result_.plan.index_name = "targets";
  result_.plan.index_bound = classes;
  if (r_.entry->family == Family::kCrossEntropy)
    launch(0, row_geometry(rows))
        .add(addr(0), addr(1), addr(2), rows, classes, index_is_64(), r_.error_word);
  else
    launch(0, row_geometry(rows))
        .add(addr(0), addr(1), addr(2), addr(3), rows, classes, index_is_64(), r_.error_word);
}

void Planner::embedding() {
  result_.plan.index_name = "ids";
  if (r_.entry->family == Family::kEmbedding) {
    // ids weight | out
    const ll rows = t(0).shape[0], vocab = t(1).shape[0], dim = t(1).shape[1];
    result_.plan.checks_indices = rows > 0;
    result_.plan.index_bound = vocab;
    launch(0, elementwise_geometry(rows * dim))
        .add(addr(0), addr(1), addr(2), rows, vocab, dim, index_is_64(), r_.error_word);
    return;
  }
  // ids dout | dweight
  const ll rows = t(0).shape[0], vocab = t(2).shape[0], dim = t(2).shape[1];
  result_.plan.checks_indices = rows > 0;
  result_.plan.index_bound = vocab;
  if (r_.scratch_bytes < scratch_bytes_needed(*r_.entry, r_.tensors))
    return fail(POLYCHIP_INTERNAL, "embedding_backward: the stream's scratch buffer is too small");
  launch(0, elementwise_geometry(dim))
      .add(addr(0), addr(1), addr(2), rows, vocab, dim, index_is_64(), r_.scratch, r_.error_word);
}

void Planner::rotary() {
  const ll seq = t(0).shape[0], heads = t(0).shape[1], dim = t(0).shape[2];
  launch(0, elementwise_geometry(seq * heads * (dim / 2)))
      .add(addr(0), addr(1), addr(2), addr(3), seq, heads, dim,
           static_cast<int>(i(attr::kInverse)));
}

void Planner::attention() {
  const bool backward = r_.entry->family == Family::kAttentionBackward;
  const auto& q = t(backward ? 1 : 0);
  const ll heads = q.shape[0] * q.shape[1], seq = q.shape[2], dim = q.shape[3];
  const ll rows = heads * seq;
  const double scale = f(attr::kScale);
  const int causal = static_cast<int>(i(attr::kCausal));
  const size_t acc = accumulator_bytes(dtype_);
  std::string why;
  auto one = attention_geometry(rows, seq, 1, acc, r_.max_shared_bytes, &why);
  auto two = attention_geometry(rows, seq, 2, acc, r_.max_shared_bytes, &why);
  if (!one || (backward && !two)) return fail(POLYCHIP_UNSUPPORTED, r_.entry->op + (": " + why));
  if (!backward) {
    launch(0, *one).add(addr(0), addr(1), addr(2), addr(3), addr(4), heads, seq, dim, scale,
                        causal);
    return;
  }
  // do q k v o lse | dq dk dv; the row deltas live in the scratch buffer.
  if (r_.scratch_bytes < scratch_bytes_needed(*r_.entry, r_.tensors))
    return fail(POLYCHIP_INTERNAL, "attention_backward: the stream's scratch buffer is too small");
  launch(0, *one).add(addr(0), addr(1), addr(2), addr(3), addr(4), addr(5), addr(6), r_.scratch,
                      heads, seq, dim, scale, causal);
  launch(1, *two).add(addr(0), addr(1), addr(2), addr(3), addr(5), r_.scratch, addr(7), addr(8),
                      heads, seq, dim, scale, causal);
}

void Planner::adamw() {
  const ll n = t(0).shape[0];
  const int64_t step = i(attr::kStep);
  const double b1 = f(attr::kBeta1), b2 = f(attr::kBeta2);
  const float c1 = static_cast<float>(1.0 - std::pow(b1, static_cast<double>(step)));
  const float c2 = static_cast<float>(1.0 - std::pow(b2, static_cast<double>(step)));
  auto& p = launch(0, elementwise_geometry(n));
  for (int k = 0; k < 7; ++k) p.add(addr(k));
  p.add(n, static_cast<float>(f(attr::kLr)), static_cast<float>(b1), static_cast<float>(b2),
        static_cast<float>(f(attr::kAdamEps)), static_cast<float>(f(attr::kWeightDecay)), c1, c2);
}

void Planner::gemm() {
  const auto& a = t(0);
  const auto& b = t(1);
  const int o = a.rank - 2;
  const ll batch = o ? a.shape[0] : 1;
  const int ta = static_cast<int>(i(attr::kTransA)), tb = static_cast<int>(i(attr::kTransB));
  const ll m = ta ? a.shape[o + 1] : a.shape[o], k = ta ? a.shape[o] : a.shape[o + 1];
  const ll n = tb ? b.shape[o] : b.shape[o + 1];
  auto g = gemm_geometry(m, n, batch);
  if (!g)
    return fail(POLYCHIP_UNSUPPORTED,
                fmt::format("gemm: M = {} exceeds the tiled kernel's limit of 1048560 rows", m));
  launch(0, *g).add(addr(0), addr(1), addr(2), addr(3), batch, m, n, k, ta, tb, f(attr::kAlpha),
                    f(attr::kBeta));
}

PlanResult Planner::run() {
  if (!is_kernel_dtype(dtype_) && r_.entry->family != Family::kCast) {
    fail(POLYCHIP_UNSUPPORTED,
         fmt::format("{}: no kernel for dtype code {}", r_.entry->op, dtype_));
    return std::move(result_);
  }
  switch (r_.entry->family) {
    case Family::kUnary:
    case Family::kUnaryBackward:
    case Family::kBinary:
    case Family::kFill:
    case Family::kCast:
      elementwise();
      break;
    case Family::kReduce:
    case Family::kArgmax:
      reduction();
      break;
    case Family::kSoftmax:
    case Family::kSoftmaxBackward:
      softmax();
      break;
    case Family::kNorm:
    case Family::kNormBackward:
      norm();
      break;
    case Family::kCrossEntropy:
    case Family::kCrossEntropyBackward:
      loss();
      break;
    case Family::kEmbedding:
    case Family::kEmbeddingBackward:
      embedding();
      break;
    case Family::kRotary:
      rotary();
      break;
    case Family::kAttention:
    case Family::kAttentionBackward:
      attention();
      break;
    case Family::kAdamW:
      adamw();
      break;
    case Family::kGemm:
      gemm();
      break;
  }
  for (const auto& l : result_.plan.launches)
    if (!l->params.ok()) fail(POLYCHIP_INTERNAL, l->symbol + ": kernel arguments exceed 4 KiB");
  return std::move(result_);
}

}  // namespace

uint64_t scratch_bytes_needed(const CatalogEntry& entry, std::span<const polychip_tensor> tensors) {
  const polychip_dtype dtype = tensors[entry.dtype_tensor].dtype;
  const uint64_t acc = accumulator_bytes(dtype);
  if (entry.family == Family::kEmbeddingBackward)
    return acc * static_cast<uint64_t>(tensors[2].shape[0] * tensors[2].shape[1]);
  if (entry.family == Family::kAttentionBackward) {
    const auto& q = tensors[1];
    return acc * static_cast<uint64_t>(q.shape[0] * q.shape[1] * q.shape[2]);
  }
  return 0;
}

PlanResult plan_op(const OpRequest& request) {
  PlanResult bad;
  bad.status = POLYCHIP_INVALID_ARGUMENT;
  if (!request.entry || !request.attrs) {
    bad.message = "plan_op: missing op entry or attributes";
    return bad;
  }
  const size_t needed = static_cast<size_t>(request.entry->dtype_tensor) + 1;
  if (request.tensors.size() < needed || request.addresses.size() != request.tensors.size()) {
    bad.message = fmt::format("{}: got {} tensors and {} addresses", request.entry->op,
                              request.tensors.size(), request.addresses.size());
    return bad;
  }
  return Planner(request).run();
}

}  // namespace polychip::gpu
