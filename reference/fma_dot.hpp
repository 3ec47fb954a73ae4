// Sequential fused dot products: acc = fma(a[k], b[k], acc) for k = 0..n-1,
// in order — the inner loop of the emulated gemm and attention. Uses the
// CPU's FMA instruction when it has one (same result as std::fma, faster).
#pragma once

#include <cstdint>

namespace polychip::reference {

float fma_dot(const float* a, const float* b, int64_t n, float acc);
double fma_dot(const double* a, const double* b, int64_t n, double acc);

// Four independent dot products of `a` with b[0..3] (each in k order, as
// fma_dot); interleaved only to hide FMA latency.
void fma_dot4(const float* a, const float* const b[4], int64_t n, float acc[4]);
void fma_dot4(const double* a, const double* const b[4], int64_t n, double acc[4]);

// y[k] = fma(alpha, x[k], y[k]) for k = 0..n-1 (each element one FMA).
void fma_axpy(float alpha, const float* x, float* y, int64_t n);
void fma_axpy(double alpha, const double* x, double* y, int64_t n);

}  // namespace polychip::reference
