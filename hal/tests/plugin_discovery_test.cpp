// Plugins found through POLYCHIP_ADAPTER_PATH: good ones are listed, bad
// ones refused with the reason, and the run carries on.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "test_runtime.hpp"

namespace polychip {
namespace {

const std::string kAdapters = std::string(POLYCHIP_TEST_PLUGIN_DIR) + "/adapters";

// The error of asking `rt` for the device `spec`, which it must not give.
std::string device_error(const Runtime& rt, const std::string& spec) {
  try {
    rt.device(spec);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << spec << ": a device was given";
  return "";
}

std::string reason_for(const Runtime& rt, const std::string& file) {
  for (const auto& r : rt.refused_adapters())
    if (r.origin.find(file) != std::string::npos) return r.reason;
  return "(not refused)";
}

TEST(PluginDiscoveryTest, GoodPluginsLoadBadOnesAreRefusedWithTheReason) {
  auto o = testing::cpu_only_options();
  o.adapter_path = {kAdapters};
  Runtime rt(o);
  std::vector<std::string> names;
  for (const auto& a : rt.adapters()) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu", "testplug", "testminor"}));
  const auto& minor = rt.adapters()[2];
  EXPECT_EQ(minor.abi_minor, 7);  // a newer minor is accepted
  EXPECT_NE(minor.origin.find("libtestplug_newer_minor.so"), std::string::npos);
  EXPECT_EQ(rt.device("testplug").device_type(), "testplug.v1");

  EXPECT_NE(reason_for(rt, "libtestplug_major2.so").find("ABI version 2.0"), std::string::npos);
  EXPECT_NE(reason_for(rt, "libtestplug_major2.so").find("HAL's ABI 1.1"), std::string::npos);
  EXPECT_NE(reason_for(rt, "libtestplug_too_small.so").find("struct_size"), std::string::npos);
  EXPECT_NE(reason_for(rt, "libtestplug_no_entry.so").find("no symbol 'polychip_adapter_get_api'"),
            std::string::npos);
  EXPECT_EQ(reason_for(rt, "libtestplug_null_copy.so"), "malformed table: function 'copy' is NULL");
  EXPECT_NE(reason_for(rt, "libnot_an_elf.so").find("cannot load"), std::string::npos);
  const std::string bad_type = reason_for(rt, "libtestplug_bad_device_type.so");
  EXPECT_NE(bad_type.find("'MyChip.X1'"), std::string::npos) << bad_type;
  EXPECT_NE(bad_type.find("lower-case 'vendor.model'"), std::string::npos) << bad_type;
  EXPECT_EQ(rt.refused_adapters().size(), 6u);

  // The surviving plugin works through the HAL.
  std::vector<float> in = {1, 2, 3}, out(3);
  Tensor t = Tensor::from_host(rt.device("testplug"), DType::kF32, {3}, in.data());
  t.copy_to_host(out.data());
  EXPECT_EQ(out, in);
}

// An adapter counts its devices (which initialises its vendor runtime: PoCL's
// took ~0.1 s a process) the first time something needs them, and once.
TEST(PluginDiscoveryTest, AnAdapterCountsItsDevicesOnlyWhenFirstNeededAndOnce) {
  // The runtime's dlopen of the same file gets this copy, and its counter.
  void* plugin = dlopen((kAdapters + "/libtestplug_good.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << dlerror();
  auto calls = reinterpret_cast<int (*)()>(dlsym(plugin, "testplug_device_count_calls"));
  ASSERT_NE(calls, nullptr);
  const int before = calls();
  auto o = testing::cpu_only_options();
  o.adapter_path = {kAdapters};
  Runtime rt(o);
  EXPECT_EQ(rt.device("cpu").device_type(), "cpu.host");
  EXPECT_EQ(rt.find_device_type("cpu.host")->label(), "cpu:0");
  EXPECT_NE(rt.adapter_api("cpu"), nullptr);
  EXPECT_EQ(calls(), before) << "counted while only the cpu adapter was needed";
  // A device type is looked up first in the adapter its vendor part names.
  EXPECT_EQ(rt.device("testplug.v1").device_type(), "testplug.v1");
  EXPECT_EQ(calls(), before + 1);
  EXPECT_EQ(rt.devices().size(), 3u);  // cpu, testplug, testminor
  EXPECT_EQ(rt.adapters().size(), 3u);
  EXPECT_EQ(rt.device("testplug").device_type(), "testplug.v1");
  EXPECT_EQ(calls(), before + 1) << "counted twice";
  dlclose(plugin);
}

// A device type id that refuses its adapter is found when the adapter is
// first asked for devices, and the adapter then has none to give.
TEST(PluginDiscoveryTest, AnAdapterWithABadDeviceTypeIsRefusedWhenFirstAsked) {
  auto o = testing::cpu_only_options();
  o.adapter_path = {kAdapters};
  Runtime rt(o);
  EXPECT_EQ(rt.adapter_api("testbadtype"), nullptr);
  const std::string error = device_error(rt, "testbadtype");
  EXPECT_NE(error.find("NOT_FOUND: no device 'testbadtype'"), std::string::npos) << error;
  // ...and why: the refusal, so a user need not run `polychip info`.
  EXPECT_NE(error.find("'MyChip.X1'"), std::string::npos) << error;
  EXPECT_NE(reason_for(rt, "libtestplug_bad_device_type.so").find("'MyChip.X1'"),
            std::string::npos);
}

TEST(PluginDiscoveryTest, SelectionKeepsOnlyNamedAdaptersAndReportsUnknownNames) {
  auto o = testing::cpu_only_options();
  o.adapter_path = {kAdapters};
  o.selected_adapters = std::vector<std::string>{"testminor", "nosuch"};
  Runtime rt(o);
  ASSERT_EQ(rt.adapters().size(), 1u);
  EXPECT_EQ(rt.adapters()[0].name, "testminor");
  EXPECT_NE(reason_for(rt, "POLYCHIP_ADAPTERS").find("'nosuch'"), std::string::npos);
  for (const char* spec : {"testplug", "testplug.v1"})
    EXPECT_NE(device_error(rt, spec).find(
                  "adapter 'testplug' is not selected by POLYCHIP_ADAPTERS (testminor, nosuch)"),
              std::string::npos)
        << spec;
}

// POLYCHIP_ADAPTERS="," selects nothing: said, not left to a device list
// that is empty without a word.
TEST(PluginDiscoveryTest, ASelectionNamingNoAdapterIsReported) {
  auto o = testing::cpu_only_options();
  o.selected_adapters = std::vector<std::string>{};
  Runtime rt(o);
  EXPECT_TRUE(rt.adapters().empty());
  EXPECT_NE(reason_for(rt, "POLYCHIP_ADAPTERS").find("names no adapter, so none is loaded"),
            std::string::npos);
}

const AdapterInfo* adapter_named(const Runtime& rt, const std::string& name) {
  for (const auto& a : rt.adapters())
    if (a.name == name) return &a;
  return nullptr;
}

// Two adapters reporting one device type (a renamed copy of another) are
// named; one adapter with several devices of one type is no conflict.
TEST(PluginDiscoveryTest, ADeviceTypeReportedByTwoAdaptersIsAConflict) {
  auto o = testing::cpu_only_options();
  o.adapter_path = {kAdapters};
  EXPECT_TRUE(Runtime(o).device_type_conflicts().empty());
  o.adapter_path.push_back(std::string(POLYCHIP_TEST_PLUGIN_DIR) + "/adapters_twin");
  Runtime rt(o);
  EXPECT_EQ(rt.device_type_conflicts(),
            std::vector<std::string>{
                "device type 'testplug.v1' is reported by adapters testplug, testtwin"});
}

// What a real plugin folder also holds: versioned library names, adapters
// without devices, a README, a backup copy of a library and other names that
// are not "name.so[.N...]" (".so", "x.so.", "x.so.1a", "x.so..1").
TEST(PluginDiscoveryTest, AFolderOfVersionedNamesDevicelessAdaptersAndStrayFiles) {
  auto o = testing::cpu_only_options();
  o.adapter_path = {std::string(POLYCHIP_TEST_PLUGIN_DIR) + "/adapters_edge"};
  Runtime rt(o);
  std::vector<std::string> names;
  for (const auto& a : rt.adapters()) names.push_back(a.name);
  // In file-name order: libtestedge.so.1, libtestnodevsilent.so.1.2,
  // libtestplug_no_devices.so.
  EXPECT_EQ(names, (std::vector<std::string>{"cpu", "testedge", "testnodevsilent", "testnodev"}));
  // libtestnodevsilent.so.1.2 is loaded; the stray files are neither loaded
  // nor refused (dlopen would refuse them, noisily).
  EXPECT_TRUE(rt.refused_adapters().empty()) << rt.refused_adapters()[0].origin;

  // Device strings that fill their fields without a NUL keep size - 1 bytes.
  Device edge = rt.device("testedge");
  EXPECT_EQ(edge.device_type(), "testedge." + std::string(POLYCHIP_DEVICE_TYPE_MAX - 10, 'x'));
  EXPECT_EQ(edge.properties().name, std::string(POLYCHIP_DEVICE_NAME_MAX - 1, 'n'));
  EXPECT_EQ(adapter_named(rt, "testedge")->device_count, 1);
  EXPECT_EQ(adapter_named(rt, "testedge")->unavailable_reason, "");

  // No devices: listed with none, and the adapter's reason or "no devices".
  const size_t devices = rt.devices().size();
  EXPECT_EQ(devices, 2u);  // cpu, testedge
  const AdapterInfo* nodev = adapter_named(rt, "testnodev");
  ASSERT_NE(nodev, nullptr);
  EXPECT_EQ(nodev->device_count, 0);
  EXPECT_EQ(nodev->unavailable_reason, "no test chip in this machine");
  EXPECT_EQ(adapter_named(rt, "testnodevsilent")->unavailable_reason, "no devices");
  // Asked for one of its devices, the error says why it has none.
  for (const char* spec : {"testnodev", "testnodev:0", "testnodev.model"})
    EXPECT_NE(device_error(rt, spec).find(
                  "adapter 'testnodev' has no devices: no test chip in this machine"),
              std::string::npos)
        << spec;
  // It has devices: nothing more to say.
  EXPECT_TRUE(device_error(rt, "testedge:1").ends_with("there is no device 1"));
}

TEST(PluginDiscoveryTest, MissingFolderIsReportedNotFatal) {
  auto o = testing::cpu_only_options();
  o.adapter_path = {"/nonexistent/polychip/plugins"};
  Runtime rt(o);
  EXPECT_EQ(rt.adapters().size(), 1u);
  EXPECT_NE(reason_for(rt, "/nonexistent").find("unreadable"), std::string::npos);
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << cmd;
  return out;
}

TEST(PluginDiscoveryTest, PolychipInfoListsPluginsAndRefusals) {
  auto j = nlohmann::json::parse(
      run("POLYCHIP_ADAPTER_PATH=" + kAdapters + " " POLYCHIP_CLI " info --json"));
  EXPECT_EQ(j["schema"], "polychip.info/1");
  bool found_cpu = false, found_plugin = false;
  for (const auto& a : j["adapters"]) {
    if (a["name"] == "cpu") found_cpu = a["origin"] == "built-in";
    if (a["name"] == "testplug")
      found_plugin = a["abi_version"] == "1.0" && a["origin"].get<std::string>().find(
                                                      "libtestplug_good.so") != std::string::npos;
  }
  EXPECT_TRUE(found_cpu);
  EXPECT_TRUE(found_plugin);
  bool cpu_type = false;
  for (const auto& d : j["devices"]) cpu_type |= d["device_type"] == "cpu.host";
  EXPECT_TRUE(cpu_type);
  bool major_refused = false;
  for (const auto& r : j["refused"])
    major_refused |= r["origin"].get<std::string>().find("major2") != std::string::npos &&
                     r["reason"].get<std::string>().find("2.0") != std::string::npos;
  EXPECT_TRUE(major_refused);
  bool bad_device_type_refused = false;
  for (const auto& r : j["refused"])
    bad_device_type_refused |=
        r["reason"].get<std::string>().find("'MyChip.X1'") != std::string::npos;
  EXPECT_TRUE(bad_device_type_refused);
  // The human table shows the same.
  std::string table = run("POLYCHIP_ADAPTER_PATH=" + kAdapters + " " POLYCHIP_CLI " info");
  EXPECT_NE(table.find("testplug"), std::string::npos);
  EXPECT_NE(table.find("Refused"), std::string::npos);
}

}  // namespace
}  // namespace polychip
