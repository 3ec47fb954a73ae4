// The contract ops the training workload calls, each one dispatcher call on
// one stream, so every adapter runs the workload. Views are row-major unless
// a helper says otherwise; strided_view builds the permuted views that the
// attention layout changes copy through.
#pragma once

#include <cstdint>
#include <vector>

#include "polychip/dispatcher.hpp"
#include "polychip/memory.hpp"
#include "polychip/tensor.hpp"

namespace polychip::training {

// A tensor's values copied to the host, as doubles (any dtype).
std::vector<double> host_values(const Tensor& t);

// A row-major view of `shape` into `buffer` at element `offset` of `dtype`.
TensorView row_major_view(const Buffer& buffer, DType dtype, Shape shape, int64_t offset = 0);
// A view with explicit element strides.
TensorView strided_view(const Buffer& buffer, DType dtype, Shape shape, Shape strides,
                        int64_t offset = 0);

// A row-major tensor inside a buffer: parameters, gradients and activations
// are slices of a few large buffers (one allocation each, as llm.c does).
struct BufferSlice {
  const Buffer* buffer = nullptr;
  DType dtype = DType::kF32;
  int64_t offset = 0;  // elements
  Shape shape;
  TensorView view() const { return row_major_view(*buffer, dtype, shape, offset); }
  TensorView view(Shape as_shape, Shape strides, int64_t extra_offset = 0) const {
    return strided_view(*buffer, dtype, std::move(as_shape), std::move(strides),
                        offset + extra_offset);
  }
  int64_t numel() const { return element_count(shape); }
};

class HalOps {
 public:
  HalOps(Dispatcher& dispatcher, const Stream& stream) : dispatcher_(dispatcher), stream_(stream) {}

  // y = op(a) @ op(b) (+ beta y): Conv1D weights are [in, out].
  void gemm(const TensorView& a, const TensorView& b, const TensorView& y, bool trans_a,
            bool trans_b, double beta = 0.0);
  // y[r, :] += bias for every row r of the [rows, n] tensor y.
  void add_bias(const TensorView& y, const BufferSlice& bias);
  // dbias[n] = sum over rows of dy[rows, n].
  void bias_grad(const TensorView& dy, const BufferSlice& dbias);
  void add(const TensorView& a, const TensorView& b, const TensorView& out);
  // y = x * scalar (a stride-0 view of a one-element tensor).
  void scale(const TensorView& x, double scalar, const TensorView& y);
  void copy(const TensorView& x, const TensorView& y);
  // y = x converted to y's dtype (round to nearest even).
  void cast(const TensorView& x, const TensorView& y);
  void gelu_tanh(const TensorView& x, const TensorView& y);
  void gelu_tanh_backward(const TensorView& dy, const TensorView& x, const TensorView& dx);
  void layernorm(const TensorView& x, const TensorView& gamma, const TensorView& beta,
                 const TensorView& y, const TensorView& mean, const TensorView& rstd, double eps);
  void layernorm_backward(const TensorView& dy, const TensorView& x, const TensorView& gamma,
                          const TensorView& mean, const TensorView& rstd, const TensorView& dx,
                          const TensorView& dgamma, const TensorView& dbeta);
  void attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& o,
                 const TensorView& lse, double scale);
  void attention_backward(const TensorView& d_o, const TensorView& q, const TensorView& k,
                          const TensorView& v, const TensorView& o, const TensorView& lse,
                          const TensorView& dq, const TensorView& dk, const TensorView& dv,
                          double scale);
  void embedding(const TensorView& ids, const TensorView& weight, const TensorView& out);
  void embedding_backward(const TensorView& ids, const TensorView& dout, const TensorView& dweight);
  void cross_entropy(const TensorView& logits, const TensorView& targets, const TensorView& loss);
  void cross_entropy_backward(const TensorView& logits, const TensorView& targets,
                              const TensorView& dloss, const TensorView& dlogits);
  void fill(const TensorView& out, double value);
  // Global L2 norm of a 1-D tensor into a [1] tensor.
  void l2_norm(const TensorView& x, const TensorView& y);
  void adamw(const TensorView& param, const TensorView& grad, const TensorView& m,
             const TensorView& v, double lr, double beta1, double beta2, double eps,
             double weight_decay, int64_t step);

  const Stream& stream() const { return stream_; }
  Dispatcher& dispatcher() const { return dispatcher_; }

 private:
  void call(const char* op, std::initializer_list<TensorView> tensors,
            const polychip_op_attrs& attrs);
  Dispatcher& dispatcher_;
  const Stream& stream_;
};

}  // namespace polychip::training
