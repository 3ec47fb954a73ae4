#include "kernel_error.hpp"

namespace polychip::cpu {
namespace {
thread_local std::string t_last_error;
}  // namespace

polychip_status kernel_error(polychip_status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

const char* last_kernel_error() { return t_last_error.c_str(); }

}  // namespace polychip::cpu
