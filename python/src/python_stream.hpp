// polychip.Stream: an adapter stream plus the tensors of the calls queued
// on it, kept alive until synchronize() so that Python dropping a tensor
// never frees memory a queued op still uses (the adapter ABI does not
// promise that memory_free waits for queued work; the sim adapter defers
// it, others need not).
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "polychip/memory.hpp"
#include "polychip/tensor.hpp"

namespace polychip::python {

struct PythonStream {
  explicit PythonStream(const Device& device) : stream(device) {}
  ~PythonStream() {
    try {
      stream.synchronize();
    } catch (...) {  // the adapter's error was reported by the call that failed
    }
  }
  void enqueue(const std::vector<Tensor>& tensors) {
    in_flight.insert(in_flight.end(), tensors.begin(), tensors.end());
  }
  void synchronize() {
    pybind11::gil_scoped_release unlocked;
    stream.synchronize();
    in_flight.clear();
  }
  std::vector<Tensor> in_flight;
  Stream stream;
};

}  // namespace polychip::python
