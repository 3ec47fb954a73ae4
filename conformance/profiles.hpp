// Certification profiles (conformance/data/profiles.json): which op x dtype
// pairs a chip is required to support. A NotSupported case on a required
// pair is a failure of the adapter, not a skip.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace polychip::conformance {

struct RequiredPairs {
  std::vector<std::string> ops;  // "*" = every op
  std::vector<std::string> dtypes;
};

struct CertificationProfile {
  std::string name;
  std::string description;
  std::vector<RequiredPairs> required;
  // False for a profile that only helps an adapter along (bring-up): a
  // verdict under it is no certification, and says so (a caveat).
  bool certifies = true;

  bool requires_pair(const std::string& op, const std::string& dtype) const;
};

// `name` "" picks the file's default; `path` "" the built-in file. Throws
// kInvalidArgument naming the profiles there are.
CertificationProfile load_profile(const std::string& name, const std::string& path);

// The op x dtype pairs (a case's `op` and `dtype`) that the device ran
// for some cases and refused as NotSupported for others (a kernel that
// refuses some shapes or attributes): partial support, one object each,
// {"op", "dtype", "cases", "not_supported", "required"}, sorted. A case
// refused because the device does not declare one of its dtypes
// (`unsupported_dtype`: cast f32 -> f8 on a device without f8) says nothing
// of the pair and is not counted. Call before enforce_profile.
nlohmann::json partial_support(const CertificationProfile& profile,
                               const std::vector<nlohmann::json>& records);

// Turns each NotSupported record on a required pair into Fail (keeping the
// adapter's reason, with `required_by` naming the profile) and returns the
// missing pairs as "op dtype", sorted, without repeats.
std::vector<std::string> enforce_profile(const CertificationProfile& profile,
                                         std::vector<nlohmann::json>& records);

}  // namespace polychip::conformance
