// ExactSum: Neumaier-compensated summation in long double (64-bit mantissa).
// Its error stays near one long double ulp of the result for any order and
// length the contract's tests use, so sums are exact at float64 precision.
#pragma once

#include <cmath>

namespace polychip::precision::oracle_detail {

class ExactSum {
 public:
  void add(long double x) {
    long double t = sum_ + x;
    if (std::fabs(sum_) >= std::fabs(x))
      compensation_ += (sum_ - t) + x;
    else
      compensation_ += (x - t) + sum_;
    sum_ = t;
  }
  // Infinite or NaN sums carry no meaningful compensation (it is NaN).
  long double value() const { return std::isfinite(sum_) ? sum_ + compensation_ : sum_; }

 private:
  long double sum_ = 0;
  long double compensation_ = 0;
};

}  // namespace polychip::precision::oracle_detail
