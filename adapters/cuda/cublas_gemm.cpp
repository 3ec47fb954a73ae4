#include "cublas_gemm.hpp"

#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "cublas_plan.hpp"
#include "gpu_common/dynamic_library.hpp"
#include "polychip/dtype.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::cuda {

namespace {

using Handle = void*;

struct CublasApi {
  int (*cublasCreate_v2)(Handle*);
  int (*cublasSetStream_v2)(Handle, void*);
  int (*cublasSetMathMode)(Handle, int);
  int (*cublasGemmStridedBatchedEx)(Handle, int, int, int, int, int, const void*, const void*, int,
                                    int, long long, const void*, int, int, long long, const void*,
                                    void*, int, int, long long, int, int, int);
};

// A scalar in the plan's scale type.
struct Scalar {
  union {
    double f64;
    float f32;
    uint16_t f16;
  };
};

Scalar make_scalar(ScaleType type, double value) {
  Scalar s{};
  switch (type) {
    case ScaleType::kF64:
      s.f64 = value;
      break;
    case ScaleType::kF32:
      s.f32 = static_cast<float>(value);
      break;
    case ScaleType::kF16:
      s.f16 = f64_to_f16_bits(value);
      break;
  }
  return s;
}

class CublasGemm final : public gpu::GemmOverride {
 public:
  std::optional<gpu::Status> gemm(gpu::GpuDriver& driver, const gpu::GemmCall& call) override {
    if (!load()) return std::nullopt;
    const auto* attrs = call.attrs;
    const auto plan = cublas_math_plan(call.tensors[0].dtype, attrs->ints[attr::kMathMode]);
    const auto shape = cublas_gemm_shape(call.tensors, attrs->ints[attr::kTransA] != 0,
                                         attrs->ints[attr::kTransB] != 0);
    if (!plan || !shape) return std::nullopt;
    const auto& y = call.tensors[3];
    const uint64_t y_bytes = static_cast<uint64_t>(shape->stride_c) * shape->batch *
                             dtype_size(static_cast<DType>(y.dtype));
    if (y_bytes == 0) return gpu::Status::Ok();
    const double alpha = attrs->floats[attr::kAlpha], beta = attrs->floats[attr::kBeta];
    // cuBLAS updates C in place: start y from c unless y is c or c is unused.
    if (beta != 0.0 && call.addresses[2] != call.addresses[3]) {
      if (int rc = driver.copy(call.addresses[3], call.addresses[2], y_bytes, call.stream))
        return error("copy c to y", rc);
    }
    const Scalar a = make_scalar(plan->scale, alpha), b = make_scalar(plan->scale, beta);
    std::lock_guard lock(mutex_);
    Handle handle = nullptr;
    if (int rc = this->handle(call.device, &handle)) return cublas_error("cublasCreate", rc);
    if (int rc = api_.cublasSetStream_v2(handle, call.stream))
      return cublas_error("cublasSetStream", rc);
    if (int rc = api_.cublasSetMathMode(handle, plan->math_mode))
      return cublas_error("cublasSetMathMode", rc);
    int rc = api_.cublasGemmStridedBatchedEx(
        handle, shape->trans_a, shape->trans_b, shape->m, shape->n, shape->k, &a,
        reinterpret_cast<const void*>(call.addresses[1]), plan->data_type, shape->lda,
        shape->stride_a, reinterpret_cast<const void*>(call.addresses[0]), plan->data_type,
        shape->ldb, shape->stride_b, &b, reinterpret_cast<void*>(call.addresses[3]),
        plan->data_type, shape->ldc, shape->stride_c, shape->batch, plan->compute_type,
        cublas::kGemmDefault);
    if (rc) return cublas_error("cublasGemmStridedBatchedEx", rc);
    return gpu::Status::Ok();
  }

 private:
  bool load() {
    std::call_once(load_once_, [this] {
      if (!library_.open({"libcublas.so.13", "libcublas.so"}).empty()) return;
      library_.bind(api_.cublasCreate_v2, "cublasCreate_v2");
      library_.bind(api_.cublasSetStream_v2, "cublasSetStream_v2");
      library_.bind(api_.cublasSetMathMode, "cublasSetMathMode");
      library_.bind(api_.cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
      loaded_ = library_.first_missing().empty();
    });
    return loaded_;
  }

  // One handle per device, created in that device's (current) context.
  int handle(int device, Handle* out) {
    if (device >= static_cast<int>(handles_.size())) handles_.resize(device + 1, nullptr);
    if (!handles_[device])
      if (int rc = api_.cublasCreate_v2(&handles_[device])) return rc;
    *out = handles_[device];
    return 0;
  }

  static gpu::Status error(const char* what, int rc) {
    return gpu::make_status(gpu::driver_error_status(rc),
                            "cuda: gemm: " + gpu::describe_driver_call(gpu::Api::kCuda, what, rc));
  }
  static gpu::Status cublas_error(const char* what, int rc) {
    // cublasStatus_t: 3 alloc failed, 7 invalid value, 8 arch mismatch, 15 not supported.
    polychip_status s = rc == 3                 ? POLYCHIP_OUT_OF_MEMORY
                        : rc == 7               ? POLYCHIP_INVALID_ARGUMENT
                        : (rc == 8 || rc == 15) ? POLYCHIP_UNSUPPORTED
                                                : POLYCHIP_INTERNAL;
    return gpu::make_status(s, fmt::format("cuda: gemm: {} returned cublasStatus {}", what, rc));
  }

  std::once_flag load_once_;
  bool loaded_ = false;
  gpu::DynamicLibrary library_;
  CublasApi api_{};
  std::mutex mutex_;
  std::vector<Handle> handles_;
};

}  // namespace

std::unique_ptr<gpu::GemmOverride> make_cublas_gemm() { return std::make_unique<CublasGemm>(); }

}  // namespace polychip::cuda
