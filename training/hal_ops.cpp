#include "hal_ops.hpp"

#include "polychip/error.hpp"

namespace polychip::training {
namespace {

polychip_op_attrs defaults(const char* op) {
  const OpSpec* spec = find_op(op);
  if (spec == nullptr) throw Error(StatusCode::kNotFound, std::string("no op ") + op);
  return default_attrs(*spec);
}

}  // namespace

TensorView row_major_view(const Buffer& buffer, DType dtype, Shape shape, int64_t offset) {
  Shape strides = row_major_strides(shape);
  return strided_view(buffer, dtype, std::move(shape), std::move(strides), offset);
}

TensorView strided_view(const Buffer& buffer, DType dtype, Shape shape, Shape strides,
                        int64_t offset) {
  return TensorView(buffer, dtype, std::move(shape), std::move(strides),
                    static_cast<uint64_t>(offset) * dtype_size(dtype));
}

void HalOps::call(const char* op, std::initializer_list<TensorView> tensors,
                  const polychip_op_attrs& attrs) {
  dispatcher_.call(op, tensors, attrs, stream_);
}

void HalOps::gemm(const TensorView& a, const TensorView& b, const TensorView& y, bool trans_a,
                  bool trans_b, double beta) {
  polychip_op_attrs at = defaults("gemm");
  at.ints[attr::kTransA] = trans_a;
  at.ints[attr::kTransB] = trans_b;
  at.floats[attr::kBeta] = beta;
  call("gemm", {a, b, y, y}, at);
}

void HalOps::add_bias(const TensorView& y, const BufferSlice& bias) {
  call("add", {y, bias.view(y.shape(), {0, 1}), y}, defaults("add"));
}

void HalOps::bias_grad(const TensorView& dy, const BufferSlice& dbias) {
  polychip_op_attrs at = defaults("reduce_sum");
  at.ints[attr::kAxis] = 0;
  call("reduce_sum", {dy, dbias.view({1, dbias.numel()}, {dbias.numel(), 1})}, at);
}

void HalOps::add(const TensorView& a, const TensorView& b, const TensorView& out) {
  call("add", {a, b, out}, defaults("add"));
}

void HalOps::scale(const TensorView& x, double scalar, const TensorView& y) {
  Tensor s(x.device(), x.dtype(), {1});
  if (x.dtype() == DType::kF32) {
    const float v = static_cast<float>(scalar);
    s.copy_from_host(&v);
  } else if (x.dtype() == DType::kF64) {
    s.copy_from_host(&scalar);
  } else {
    throw Error(StatusCode::kUnsupported, "training: scale supports f32 and f64");
  }
  const TensorView broadcast(s.buffer(), s.dtype(), x.shape(), Shape(x.shape().size(), 0));
  call("mul", {x, broadcast, y}, defaults("mul"));
  stream_.synchronize();  // s is freed on return
}

void HalOps::copy(const TensorView& x, const TensorView& y) {
  call("copy", {x, y}, defaults("copy"));
}

std::vector<double> host_values(const Tensor& t) {
  std::vector<uint8_t> bytes(t.size_bytes());
  t.copy_to_host(bytes.data());
  std::vector<double> out(static_cast<size_t>(t.numel()));
  const size_t size = dtype_size(t.dtype());
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_as_f64(bytes.data() + i * size, t.dtype());
  return out;
}

void HalOps::cast(const TensorView& x, const TensorView& y) {
  call("cast", {x, y}, defaults("cast"));
}

void HalOps::gelu_tanh(const TensorView& x, const TensorView& y) {
  polychip_op_attrs at = defaults("gelu");
  at.ints[attr::kGeluApproximate] = 1;
  call("gelu", {x, y}, at);
}

void HalOps::gelu_tanh_backward(const TensorView& dy, const TensorView& x, const TensorView& dx) {
  polychip_op_attrs at = defaults("gelu_backward");
  at.ints[attr::kGeluApproximate] = 1;
  call("gelu_backward", {dy, x, dx}, at);
}

void HalOps::layernorm(const TensorView& x, const TensorView& gamma, const TensorView& beta,
                       const TensorView& y, const TensorView& mean, const TensorView& rstd,
                       double eps) {
  polychip_op_attrs at = defaults("layernorm");
  at.floats[attr::kEps] = eps;
  call("layernorm", {x, gamma, beta, y, mean, rstd}, at);
}

void HalOps::layernorm_backward(const TensorView& dy, const TensorView& x, const TensorView& gamma,
                                const TensorView& mean, const TensorView& rstd,
                                const TensorView& dx, const TensorView& dgamma,
                                const TensorView& dbeta) {
  call("layernorm_backward", {dy, x, gamma, mean, rstd, dx, dgamma, dbeta},
       defaults("layernorm_backward"));
}

void HalOps::attention(const TensorView& q, const TensorView& k, const TensorView& v,
                       const TensorView& o, const TensorView& lse, double scale) {
  polychip_op_attrs at = defaults("attention");
  at.floats[attr::kScale] = scale;
  at.ints[attr::kCausal] = 1;
  call("attention", {q, k, v, o, lse}, at);
}

void HalOps::attention_backward(const TensorView& d_o, const TensorView& q, const TensorView& k,
                                const TensorView& v, const TensorView& o, const TensorView& lse,
                                const TensorView& dq, const TensorView& dk, const TensorView& dv,
                                double scale) {
  polychip_op_attrs at = defaults("attention_backward");
  at.floats[attr::kScale] = scale;
  at.ints[attr::kCausal] = 1;
  call("attention_backward", {d_o, q, k, v, o, lse, dq, dk, dv}, at);
}

void HalOps::embedding(const TensorView& ids, const TensorView& weight, const TensorView& out) {
  call("embedding", {ids, weight, out}, defaults("embedding"));
}

void HalOps::embedding_backward(const TensorView& ids, const TensorView& dout,
                                const TensorView& dweight) {
  call("embedding_backward", {ids, dout, dweight}, defaults("embedding_backward"));
}

void HalOps::cross_entropy(const TensorView& logits, const TensorView& targets,
                           const TensorView& loss) {
  call("cross_entropy", {logits, targets, loss}, defaults("cross_entropy"));
}

void HalOps::cross_entropy_backward(const TensorView& logits, const TensorView& targets,
                                    const TensorView& dloss, const TensorView& dlogits) {
  call("cross_entropy_backward", {logits, targets, dloss, dlogits},
       defaults("cross_entropy_backward"));
}

void HalOps::fill(const TensorView& out, double value) {
  polychip_op_attrs at = defaults("fill");
  at.floats[attr::kFillValue] = value;
  call("fill", {out}, at);
}

void HalOps::l2_norm(const TensorView& x, const TensorView& y) {
  call("l2_norm", {x, y}, defaults("l2_norm"));
}

void HalOps::adamw(const TensorView& param, const TensorView& grad, const TensorView& m,
                   const TensorView& v, double lr, double beta1, double beta2, double eps,
                   double weight_decay, int64_t step) {
  polychip_op_attrs at = defaults("adamw");
  at.floats[attr::kLr] = lr;
  at.floats[attr::kBeta1] = beta1;
  at.floats[attr::kBeta2] = beta2;
  at.floats[attr::kAdamEps] = eps;
  at.floats[attr::kWeightDecay] = weight_decay;
  at.ints[attr::kStep] = step;
  call("adamw", {param, grad, m, v, param, m, v}, at);
}

}  // namespace polychip::training
