#include "reference/fma_dot.hpp"

#include <cmath>

namespace polychip::reference {
namespace {

template <typename T>
T dot_portable(const T* a, const T* b, int64_t n, T acc) {
  for (int64_t k = 0; k < n; ++k) acc = std::fma(a[k], b[k], acc);
  return acc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define POLYCHIP_HAVE_FMA_TARGET 1
__attribute__((target("fma"))) inline float fma_insn(float a, float b, float c) {
  return __builtin_fmaf(a, b, c);
}
__attribute__((target("fma"))) inline double fma_insn(double a, double b, double c) {
  return __builtin_fma(a, b, c);
}
__attribute__((target("fma"))) float dot_fma_insn(const float* a, const float* b, int64_t n,
                                                  float acc) {
  for (int64_t k = 0; k < n; ++k) acc = __builtin_fmaf(a[k], b[k], acc);
  return acc;
}
__attribute__((target("fma"))) double dot_fma_insn(const double* a, const double* b, int64_t n,
                                                   double acc) {
  for (int64_t k = 0; k < n; ++k) acc = __builtin_fma(a[k], b[k], acc);
  return acc;
}
__attribute__((target("fma"))) void axpy_fma_insn(float alpha, const float* x, float* y,
                                                  int64_t n) {
  for (int64_t k = 0; k < n; ++k) y[k] = __builtin_fmaf(alpha, x[k], y[k]);
}
__attribute__((target("fma"))) void axpy_fma_insn(double alpha, const double* x, double* y,
                                                  int64_t n) {
  for (int64_t k = 0; k < n; ++k) y[k] = __builtin_fma(alpha, x[k], y[k]);
}
template <typename T>
__attribute__((target("fma"))) void dot4_fma_insn(const T* a, const T* const b[4], int64_t n,
                                                  T acc[4]) {
  T a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  for (int64_t k = 0; k < n; ++k) {
    a0 = fma_insn(a[k], b[0][k], a0);
    a1 = fma_insn(a[k], b[1][k], a1);
    a2 = fma_insn(a[k], b[2][k], a2);
    a3 = fma_insn(a[k], b[3][k], a3);
  }
  acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}
bool cpu_has_fma() {
  static const bool has = __builtin_cpu_supports("fma");
  return has;
}
#endif

template <typename T>
T dot(const T* a, const T* b, int64_t n, T acc) {
#ifdef POLYCHIP_HAVE_FMA_TARGET
  if (cpu_has_fma()) return dot_fma_insn(a, b, n, acc);
#endif
  return dot_portable(a, b, n, acc);
}

template <typename T>
void axpy(T alpha, const T* x, T* y, int64_t n) {
#ifdef POLYCHIP_HAVE_FMA_TARGET
  if (cpu_has_fma()) return axpy_fma_insn(alpha, x, y, n);
#endif
  for (int64_t k = 0; k < n; ++k) y[k] = std::fma(alpha, x[k], y[k]);
}

template <typename T>
void dot4(const T* a, const T* const b[4], int64_t n, T acc[4]) {
#ifdef POLYCHIP_HAVE_FMA_TARGET
  if (cpu_has_fma()) return dot4_fma_insn(a, b, n, acc);
#endif
  for (int c = 0; c < 4; ++c) acc[c] = dot_portable(a, b[c], n, acc[c]);
}

}  // namespace

void fma_dot4(const float* a, const float* const b[4], int64_t n, float acc[4]) {
  dot4(a, b, n, acc);
}
void fma_dot4(const double* a, const double* const b[4], int64_t n, double acc[4]) {
  dot4(a, b, n, acc);
}

void fma_axpy(float alpha, const float* x, float* y, int64_t n) { axpy(alpha, x, y, n); }
void fma_axpy(double alpha, const double* x, double* y, int64_t n) { axpy(alpha, x, y, n); }

float fma_dot(const float* a, const float* b, int64_t n, float acc) { return dot(a, b, n, acc); }
double fma_dot(const double* a, const double* b, int64_t n, double acc) {
  return dot(a, b, n, acc);
}

}  // namespace polychip::reference
