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

  bool requires_pair(const std::string& op, const std::string& dtype) const;
};

// `name` "" picks the file's default; `path` "" the built-in file. Throws
// kInvalidArgument naming the profiles there are.
CertificationProfile load_profile(const std::string& name, const std::string& path);

// Turns each NotSupported record on a required pair into Fail (keeping the
// adapter's reason, with `required_by` naming the profile) and returns the
// missing pairs as "op dtype", sorted, without repeats.
std::vector<std::string> enforce_profile(const CertificationProfile& profile,
                                         std::vector<nlohmann::json>& records);

}  // namespace polychip::conformance
