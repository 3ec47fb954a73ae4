// The shared adapter on a machine without the vendor runtime: it must load,
// report zero devices with the reason, and refuse device work with a message
// that names the device and the reason. The real CUDA and HIP drivers are
// exercised in adapters/cuda/tests and adapters/hip/tests; here a driver
// that cannot load stands in for "runtime missing".
#include "gpu_common/gpu_adapter.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_common/adapter_table.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::gpu {
namespace {

class MissingRuntime final : public GpuDriver {
 public:
  explicit MissingRuntime(int* loads) : loads_(loads) {}
  Api api() const override { return Api::kCuda; }
  std::string load() override {
    ++*loads_;
    return "libvendor.so.1 not found (test)";
  }
  // Nothing below may be reached without a device.
  int device_count(int*) override { return fail(); }
  int device_name(int, std::string*) override { return fail(); }
  int device_memory_bytes(int, uint64_t*) override { return fail(); }
  int device_compute_units(int, int*) override { return fail(); }
  int device_max_shared_bytes(int, int*) override { return fail(); }
  int make_current(int) override { return fail(); }
  int allocate_device(uint64_t, uint64_t*) override { return fail(); }
  int free_device(uint64_t) override { return fail(); }
  int allocate_pinned_host(uint64_t, void**) override { return fail(); }
  int free_pinned_host(void*) override { return fail(); }
  int copy(uint64_t, uint64_t, uint64_t, NativeStream) override { return fail(); }
  int fill_bytes(uint64_t, unsigned char, uint64_t, NativeStream) override { return fail(); }
  int stream_create(NativeStream*) override { return fail(); }
  int stream_destroy(NativeStream) override { return fail(); }
  int stream_synchronize(NativeStream) override { return fail(); }
  int stream_wait_event(NativeStream, NativeEvent) override { return fail(); }
  int event_create(NativeEvent*) override { return fail(); }
  int event_destroy(NativeEvent) override { return fail(); }
  int event_record(NativeEvent, NativeStream) override { return fail(); }
  int event_query(NativeEvent, bool*) override { return fail(); }
  int event_synchronize(NativeEvent) override { return fail(); }
  int event_elapsed_ms(NativeEvent, NativeEvent, float*) override { return fail(); }
  int module_load(const void*, NativeModule*) override { return fail(); }
  int module_function(NativeModule, const char*, NativeFunction*) override { return fail(); }
  int launch(NativeFunction, const LaunchGeometry&, NativeStream, void**) override {
    return fail();
  }

 private:
  int fail() {
    ADD_FAILURE() << "driver called without a device";
    return 999;
  }
  int* loads_;
};

const unsigned char kImage[] = {1, 2, 3};

TEST(GpuAdapter, MissingRuntimeMeansZeroDevicesWithTheReason) {
  int loads = 0;
  GpuAdapter a({"vendor", "vendor", "VENDOR", kImage, "built without kernels"},
               std::make_unique<MissingRuntime>(&loads));
  polychip_device_count_args c{};
  c.struct_size = sizeof c;
  ASSERT_TRUE(a.device_count(&c).ok());
  EXPECT_EQ(c.count, 0);
  ASSERT_NE(c.unavailable_reason, nullptr);
  EXPECT_STREQ(c.unavailable_reason, "libvendor.so.1 not found (test)");
  ASSERT_TRUE(a.device_count(&c).ok());
  EXPECT_EQ(loads, 1) << "the driver is loaded once";

  polychip_memory_allocate_args m{};

  m.struct_size = sizeof m;
  m.size_bytes = 16;
  Status s = a.memory_allocate(&m);
  EXPECT_EQ(s.code, POLYCHIP_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("device 0 does not exist"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("not found (test)"), std::string::npos) << s.message;
}

TEST(GpuAdapter, EmptyKernelImageNeverTouchesTheDriver) {
  int loads = 0;
  GpuAdapter a({"vendor", "vendor", "VENDOR", {}, "built without VENDOR kernels"},
               std::make_unique<MissingRuntime>(&loads));
  polychip_device_count_args c{};
  c.struct_size = sizeof c;
  ASSERT_TRUE(a.device_count(&c).ok());
  EXPECT_EQ(c.count, 0);
  EXPECT_STREQ(c.unavailable_reason, "built without VENDOR kernels");
  EXPECT_EQ(loads, 0);
}

TEST(GpuAdapter, BadArgumentsAreErrorsNotCrashes) {
  int loads = 0;
  GpuAdapter a({"vendor", "vendor", "VENDOR", kImage, ""},
               std::make_unique<MissingRuntime>(&loads));
  EXPECT_EQ(a.device_count(nullptr).code, POLYCHIP_INVALID_ARGUMENT);
  EXPECT_EQ(a.run_kernel(nullptr).code, POLYCHIP_INVALID_ARGUMENT);
  polychip_memory_free_args f{};
  f.struct_size = sizeof f;
  EXPECT_TRUE(a.memory_free(&f).ok());  // NULL memory is a no-op
  polychip_copy_args cp{};
  cp.struct_size = sizeof cp;
  cp.kind = 42;
  Status s = a.copy(&cp);
  EXPECT_EQ(s.code, POLYCHIP_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("copy kind 42"), std::string::npos);
  cp.kind = POLYCHIP_COPY_HOST_TO_DEVICE;
  s = a.copy(&cp);
  EXPECT_NE(s.message.find("'dst_memory' is NULL"), std::string::npos) << s.message;
  polychip_memory_allocate_args m{};
  m.struct_size = sizeof m;
  m.kind = 7;
  EXPECT_NE(a.memory_allocate(&m).message.find("memory kind 7"), std::string::npos);
}

// One device whose "device memory" is host memory: enough for the adapter
// to allocate, create a stream and plan an op; launches are only counted.
class HostMemoryDevice : public GpuDriver {
 public:
  explicit HostMemoryDevice(int* launches, Api api = Api::kCuda) : launches_(launches), api_(api) {}
  Api api() const override { return api_; }
  std::string load() override { return ""; }
  int device_count(int* count) override { return *count = 1, 0; }
  int device_name(int, std::string* name) override { return *name = "Host Memory", 0; }
  int device_memory_bytes(int, uint64_t* bytes) override { return *bytes = 1 << 20, 0; }
  int device_compute_units(int, int* units) override { return *units = 1, 0; }
  int device_max_shared_bytes(int, int* bytes) override { return *bytes = 48 << 10, 0; }
  int make_current(int) override { return 0; }
  int allocate_device(uint64_t bytes, uint64_t* address) override {
    *address = reinterpret_cast<uint64_t>(std::malloc(bytes));
    return 0;
  }
  int free_device(uint64_t address) override {
    std::free(reinterpret_cast<void*>(address));
    return 0;
  }
  int allocate_pinned_host(uint64_t bytes, void** host) override {
    return *host = std::malloc(bytes), 0;
  }
  int free_pinned_host(void* host) override { return std::free(host), 0; }
  int copy(uint64_t dst, uint64_t src, uint64_t bytes, NativeStream) override {
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return 0;
  }
  int fill_bytes(uint64_t dst, unsigned char value, uint64_t bytes, NativeStream) override {
    std::memset(reinterpret_cast<void*>(dst), value, bytes);
    return 0;
  }
  int stream_create(NativeStream* stream) override { return *stream = this, 0; }
  int stream_destroy(NativeStream) override { return 0; }
  int stream_synchronize(NativeStream) override { return 0; }
  int stream_wait_event(NativeStream, NativeEvent) override { return 0; }
  int event_create(NativeEvent* event) override { return *event = this, 0; }
  int event_destroy(NativeEvent) override { return 0; }
  int event_record(NativeEvent, NativeStream) override { return 0; }
  int event_query(NativeEvent, bool* complete) override { return *complete = true, 0; }
  int event_synchronize(NativeEvent) override { return 0; }
  int event_elapsed_ms(NativeEvent, NativeEvent, float* ms) override { return *ms = 0, 0; }
  int module_load(const void*, NativeModule* module) override { return *module = this, 0; }
  int module_function(NativeModule, const char*, NativeFunction* function) override {
    return *function = this, 0;
  }
  int launch(NativeFunction, const LaunchGeometry&, NativeStream, void**) override {
    ++*launches_;
    return 0;
  }

 private:
  int* launches_;
  Api api_;
};

// Device memory, a stream, and their release, through the adapter's ABI.
polychip_memory* allocate_device(GpuAdapter& a, uint64_t bytes) {
  polychip_memory_allocate_args m{};
  m.struct_size = sizeof m;
  m.kind = POLYCHIP_MEMORY_DEVICE;
  m.size_bytes = bytes;
  EXPECT_TRUE(a.memory_allocate(&m).ok());
  return m.memory;
}
polychip_stream* create_stream(GpuAdapter& a) {
  polychip_stream_create_args sc{};
  sc.struct_size = sizeof sc;
  EXPECT_TRUE(a.stream_create(&sc).ok());
  return sc.stream;
}
void release(GpuAdapter& a, polychip_stream* stream, std::vector<polychip_memory*> memories) {
  polychip_stream_args sd{};
  sd.struct_size = sizeof sd;
  sd.stream = stream;
  EXPECT_TRUE(a.stream_destroy(&sd).ok());
  for (polychip_memory* memory : memories) {
    polychip_memory_free_args f{};
    f.struct_size = sizeof f;
    f.memory = memory;
    EXPECT_TRUE(a.memory_free(&f).ok());
  }
}

// As CUDA's driver copies from pageable memory: a host-to-device copy with
// no stream returns once the source is staged and lands when the null
// stream is synchronized; the adapter's streams do not wait for it.
class StagedCopyDevice final : public HostMemoryDevice {
 public:
  using HostMemoryDevice::HostMemoryDevice;
  int copy(uint64_t dst, uint64_t src, uint64_t bytes, NativeStream stream) override {
    if (stream) return HostMemoryDevice::copy(dst, src, bytes, stream);
    const auto* from = reinterpret_cast<const uint8_t*>(src);
    pending_.push_back({dst, std::vector<uint8_t>(from, from + bytes)});
    return 0;
  }
  int stream_synchronize(NativeStream stream) override {
    if (stream) return 0;
    for (const auto& [dst, bytes] : pending_)
      std::memcpy(reinterpret_cast<void*>(dst), bytes.data(), bytes.size());
    pending_.clear();
    return 0;
  }

 private:
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> pending_;
};

// The ABI: a copy with no stream is complete on return, so a copy queued on
// a stream after it reads what it wrote.
TEST(GpuAdapter, ACopyWithoutAStreamIsCompleteOnReturn) {
  int launches = 0;
  GpuAdapter a({"vendor", "vendor", "VENDOR", kImage, ""},
               std::make_unique<StagedCopyDevice>(&launches));
  polychip_memory* memory = allocate_device(a, 64);
  polychip_stream* stream = create_stream(a);
  ASSERT_TRUE(memory && stream);
  std::vector<uint8_t> written(64), read(64, 0);
  for (size_t i = 0; i < written.size(); ++i) written[i] = static_cast<uint8_t>(i + 1);
  polychip_copy_args up{};
  up.struct_size = sizeof up;
  up.kind = POLYCHIP_COPY_HOST_TO_DEVICE;
  up.size_bytes = written.size();
  up.src_host = written.data();
  up.dst_memory = memory;
  ASSERT_TRUE(a.copy(&up).ok());
  polychip_copy_args down{};
  down.struct_size = sizeof down;
  down.kind = POLYCHIP_COPY_DEVICE_TO_HOST;
  down.size_bytes = read.size();
  down.src_memory = memory;
  down.dst_host = read.data();
  down.stream = stream;
  ASSERT_TRUE(a.copy(&down).ok());
  EXPECT_EQ(read, written);
  release(a, stream, {memory});
}

TEST(GpuAdapter, TensorOutsideItsMemoryIsRejectedBeforeAnyLaunch) {
  int launches = 0;
  GpuAdapter a({"vendor", "vendor", "VENDOR", kImage, ""},
               std::make_unique<HostMemoryDevice>(&launches));
  polychip_memory* x = allocate_device(a, 16 * sizeof(float));
  polychip_memory* y = allocate_device(a, 16 * sizeof(float));
  polychip_stream* stream = create_stream(a);
  ASSERT_TRUE(x && y && stream);

  // relu(x) -> y over 16 floats; then over 17, one past the end of x's memory.
  polychip_tensor t[2]{};
  for (int k = 0; k < 2; ++k) {
    t[k].struct_size = sizeof t[k];
    t[k].dtype = POLYCHIP_DTYPE_F32;
    t[k].rank = 1;
    t[k].shape[0] = 16;
    t[k].strides[0] = 1;
  }
  t[0].memory = x;
  t[1].memory = y;
  polychip_op_attrs attrs{};
  attrs.struct_size = sizeof attrs;
  polychip_kernel_args k{};
  k.struct_size = sizeof k;
  k.op = "relu";
  k.stream = stream;
  k.tensors = t;
  k.num_tensors = 2;
  k.attrs = &attrs;
  Status s = a.run_kernel(&k);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_GT(launches, 0) << "the in-bounds call launches";

  const int launched = launches;
  t[0].byte_offset = sizeof(float);
  s = a.run_kernel(&k);
  EXPECT_EQ(s.code, POLYCHIP_INVALID_ARGUMENT);
  EXPECT_EQ(s.message, "relu: tensor 0 reaches byte 68 but its memory holds 64 bytes");
  EXPECT_EQ(launches, launched) << "nothing launched for the bad view";
  release(a, stream, {x, y});
}

// memory_export (ABI 1.1): device memory as the driver's pointer on its
// interface (what libfabric registers with FI_HMEM_CUDA / FI_HMEM_ROCR),
// pinned host memory as system memory.
TEST(GpuAdapter, MemoryIsExportedOnTheDriversInterface) {
  for (const auto& [api, interface] : {std::pair{Api::kCuda, POLYCHIP_MEMORY_INTERFACE_CUDA},
                                       std::pair{Api::kHip, POLYCHIP_MEMORY_INTERFACE_ROCR}}) {
    int launches = 0;
    GpuAdapter a({"vendor", "vendor", "VENDOR", kImage, ""},
                 std::make_unique<HostMemoryDevice>(&launches, api));
    for (polychip_memory_kind kind : {POLYCHIP_MEMORY_DEVICE, POLYCHIP_MEMORY_PINNED_HOST}) {
      polychip_memory_allocate_args m{};
      m.struct_size = sizeof m;
      m.kind = kind;
      m.size_bytes = 256;
      ASSERT_TRUE(a.memory_allocate(&m).ok());
      polychip_memory_export_args e{};
      e.struct_size = sizeof e;
      e.memory = m.memory;
      ASSERT_TRUE(a.memory_export(&e).ok());
      const auto* memory = reinterpret_cast<const GpuMemory*>(m.memory);
      if (kind == POLYCHIP_MEMORY_DEVICE) {
        EXPECT_EQ(e.interface, interface);
        EXPECT_EQ(e.address, reinterpret_cast<void*>(memory->address));
      } else {
        EXPECT_EQ(e.interface, POLYCHIP_MEMORY_INTERFACE_SYSTEM);
        EXPECT_EQ(e.address, memory->host);
      }
      EXPECT_EQ(e.device_ordinal, 0);
      EXPECT_EQ(e.size_bytes, 256u);
      EXPECT_EQ(e.dmabuf_fd, -1);
      polychip_memory_free_args f{};
      f.struct_size = sizeof f;
      f.memory = m.memory;
      EXPECT_TRUE(a.memory_free(&f).ok());
    }
    polychip_memory_export_args none{};
    none.struct_size = sizeof none;
    EXPECT_EQ(a.memory_export(&none).code, POLYCHIP_INVALID_ARGUMENT);
  }
}

TEST(GpuAdapter, KernelTableCoversEveryOpAndDtype) {
  auto fn = [](const polychip_kernel_args*) -> polychip_status { return POLYCHIP_OK; };
  auto entries = GpuAdapter::build_kernel_entries(fn);
  std::set<std::string> ops;
  for (const auto& e : entries) {
    ops.insert(e.op);
    EXPECT_EQ(e.fn, +fn);
    EXPECT_LE(e.num_dtypes, POLYCHIP_MAX_SIGNATURE);
  }
  EXPECT_EQ(ops.size(), op_contract().size());
  auto count = [&](const char* op) {
    size_t n = 0;
    for (const auto& e : entries) n += std::string(e.op) == op;
    return n;
  };
  EXPECT_EQ(count("add"), 4u);            // f64 f32 f16 bf16
  EXPECT_EQ(count("cross_entropy"), 8u);  // x {i64, i32} targets
  EXPECT_EQ(count("cast"), 36u);          // 6 x 6 float formats
  for (const auto& e : entries) {
    if (std::string(e.op) == "adamw") {
      EXPECT_EQ(e.signature[0], POLYCHIP_DTYPE_F32) << "param is always f32";
    }
  }
}

GpuAdapter& table_test_adapter() {
  static int loads = 0;
  static GpuAdapter a({"vendor", "vendor", "VENDOR", kImage, ""},
                      std::make_unique<MissingRuntime>(&loads));
  return a;
}

TEST(AdapterTable, FillsEveryFunctionAndReportsErrorsThroughLastErrorMessage) {
  const polychip_adapter_api* api =
      AdapterTable<&table_test_adapter>::table("vendor", "Vendor Inc.", "1.2.3");
  ASSERT_EQ(api->struct_size, sizeof(polychip_adapter_api));
  ASSERT_EQ(api->struct_size, POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_1);
  EXPECT_EQ(api->abi_version.major, POLYCHIP_ABI_VERSION_MAJOR);
  EXPECT_EQ(api->abi_version.minor, 1);
  EXPECT_STREQ(api->name, "vendor");
  const void* const* fns = reinterpret_cast<const void* const*>(&api->last_error_message);
  const size_t n =
      (sizeof(polychip_adapter_api) - offsetof(polychip_adapter_api, last_error_message)) /
      sizeof(void*);
  for (size_t k = 0; k < n; ++k) EXPECT_NE(fns[k], nullptr) << "function " << k;
  polychip_stream_create_args s{};
  s.struct_size = sizeof s;
  s.device = 3;
  EXPECT_EQ(api->stream_create(&s), POLYCHIP_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api->last_error_message()).find("device 3 does not exist"),
            std::string::npos);
}

}  // namespace
}  // namespace polychip::gpu
