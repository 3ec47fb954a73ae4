#include "device_type_id.hpp"

#include <utility>

#include "host/device_type_id.hpp"

namespace polychip::opencl {

using opencl_family::sanitize_id_part;

std::string platform_short_name(std::string_view platform_name) {
  static const std::pair<std::string_view, std::string_view> known[] = {
      {"Portable Computing Language", "pocl"},
      {"NVIDIA CUDA", "nvidia"},
      {"AMD Accelerated Parallel Processing", "amd"},
      {"Intel(R) OpenCL", "intel"},
      {"Intel(R) OpenCL Graphics", "intel"},
      {"Intel(R) OpenCL HD Graphics", "intel"},
      {"Intel(R) FPGA Emulation Platform for OpenCL(TM)", "intel-fpga-emu"},
      {"rusticl", "rusticl"},
      {"Clover", "clover"},
  };
  for (auto [name, short_name] : known)
    if (platform_name == name) return std::string(short_name);
  std::string s = sanitize_id_part(platform_name);
  return s.empty() ? "unknown" : s;
}

std::string device_type_id(std::string_view platform_name, std::string_view device_name,
                           bool is_cpu, size_t max_length) {
  std::string device = is_cpu ? "cpu" : sanitize_id_part(device_name);
  if (device.empty()) device = "device";
  return opencl_family::join_device_type_id(
      "opencl", platform_short_name(platform_name) + "-" + device, max_length);
}

}  // namespace polychip::opencl
