// The C ABI's struct_size rules at the cpu and sim adapters' own tables (the
// HAL always sets struct_size; a framework calling an adapter directly may
// not): a struct to fill whose struct_size was not set is INVALID_ARGUMENT,
// never a wrapped-around copy, and an older caller's shorter struct is
// written only as far as it reaches.
#include <cstring>

#include <gtest/gtest.h>

#include "cpu_adapter.hpp"
#include "sim_adapter.hpp"

namespace {

struct AdapterTable {
  const char* name;
  const polychip_adapter_api* (*get)();
};

class StructSizeTest : public ::testing::TestWithParam<AdapterTable> {
 protected:
  const polychip_adapter_api& api() const { return *GetParam().get(); }
  polychip_status properties(polychip_device_properties* into) const {
    polychip_device_properties_args a{};
    a.struct_size = sizeof a;
    a.device = 0;
    a.properties = into;
    return api().device_properties(&a);
  }
};

TEST_P(StructSizeTest, PropertiesWithStructSizeUnsetAreRefused) {
  for (size_t unset : {size_t{0}, sizeof(size_t) - 1}) {
    polychip_device_properties p;
    std::memset(&p, 0x5A, sizeof p);
    p.struct_size = unset;
    EXPECT_EQ(properties(&p), POLYCHIP_INVALID_ARGUMENT) << unset;
    EXPECT_NE(std::strstr(api().last_error_message(), "struct_size"), nullptr)
        << api().last_error_message();
    EXPECT_EQ(p.struct_size, unset);
    EXPECT_EQ(p.device_type[0], 0x5A) << "nothing is written";
  }
}

TEST_P(StructSizeTest, AnOlderShorterStructIsWrittenOnlyAsFarAsItReaches) {
  polychip_device_properties p;
  std::memset(&p, 0x5A, sizeof p);
  p.struct_size = POLYCHIP_STRUCT_SIZE(polychip_device_properties, name);
  ASSERT_EQ(properties(&p), POLYCHIP_OK) << api().last_error_message();
  EXPECT_EQ(p.struct_size, POLYCHIP_STRUCT_SIZE(polychip_device_properties, name));
  EXPECT_GT(std::strlen(p.device_type), 0u);
  const auto* beyond = reinterpret_cast<const unsigned char*>(&p.memory_bytes);
  for (size_t i = 0; i < sizeof p.memory_bytes; ++i) EXPECT_EQ(beyond[i], 0x5A) << i;
}

TEST_P(StructSizeTest, ArgsWithStructSizeUnsetAreRefused) {
  polychip_device_properties p{};
  p.struct_size = sizeof p;
  polychip_device_properties_args a{};
  a.properties = &p;
  EXPECT_EQ(api().device_properties(&a), POLYCHIP_INVALID_ARGUMENT);
  EXPECT_EQ(api().device_properties(nullptr), POLYCHIP_INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(Adapters, StructSizeTest,
                         ::testing::Values(AdapterTable{"cpu", &polychip_cpu_adapter_get_api},
                                           AdapterTable{"sim", &polychip_sim_adapter_get_api}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
