// Boolean POLYCHIP_* variables: the usual spellings work, anything else is
// an error naming the variable, never a silent "off".
#include <gtest/gtest.h>

#include <cstdlib>

#include "polychip/error.hpp"
#include "polychip/runtime.hpp"

namespace polychip {
namespace {

bool host_fallback_with(const char* value) {
  ::setenv("POLYCHIP_HOST_FALLBACK", value, 1);
  return RuntimeOptions::from_environment().host_fallback;
}

TEST(EnvironmentFlagTest, UsualBooleanSpellingsAreAccepted) {
  for (const char* on : {"1", "true", "TRUE", "yes", "Yes", "on", "ON"})
    EXPECT_TRUE(host_fallback_with(on)) << on;
  for (const char* off : {"0", "false", "False", "no", "NO", "off", "Off", ""})
    EXPECT_FALSE(host_fallback_with(off)) << off;
  ::unsetenv("POLYCHIP_HOST_FALLBACK");
  EXPECT_FALSE(RuntimeOptions::from_environment().host_fallback);
}

TEST(EnvironmentFlagTest, OtherValuesAreRejectedNamingTheVariable) {
  for (const char* bad : {"maybe", "2", "enabled", " 1"}) {
    try {
      host_fallback_with(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(e.message().find("POLYCHIP_HOST_FALLBACK='" + std::string(bad) + "'"),
                std::string::npos)
          << e.message();
      EXPECT_NE(e.message().find("true/false"), std::string::npos) << e.message();
    }
  }
  ::unsetenv("POLYCHIP_HOST_FALLBACK");
}

}  // namespace
}  // namespace polychip
