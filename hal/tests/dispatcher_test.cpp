// Dispatcher: monkey-patch (patch/restore/unknown targets, patch libraries),
// in-place hooks, host fallback counting, and call validation errors.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <numeric>

#include "test_runtime.hpp"

namespace polychip {
namespace {

const std::string kPluginDir = POLYCHIP_TEST_PLUGIN_DIR;

float* host_data(const polychip_kernel_args* a, int k) {
  polychip_memory_host_pointer_args h{};
  h.struct_size = sizeof h;
  h.memory = a->tensors[k].memory;
  if (a->adapter->memory_host_pointer(&h) != POLYCHIP_OK) return nullptr;
  return reinterpret_cast<float*>(static_cast<char*>(h.host_pointer) + a->tensors[k].byte_offset);
}

int64_t numel(const polychip_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

// y = x + 100: recognisably not what `neg` computes.
polychip_status plus_hundred(const polychip_kernel_args* a) {
  float *x = host_data(a, 0), *y = host_data(a, 1);
  for (int64_t i = 0; i < numel(a->tensors[0]); ++i) y[i] = x[i] + 100;
  return POLYCHIP_OK;
}
// A correct neg for contiguous f32.
polychip_status reference_neg(const polychip_kernel_args* a) {
  float *x = host_data(a, 0), *y = host_data(a, 1);
  for (int64_t i = 0; i < numel(a->tensors[0]); ++i) y[i] = -x[i];
  return POLYCHIP_OK;
}
polychip_status failing_kernel(const polychip_kernel_args*) { return POLYCHIP_DATA_CORRUPTION; }
// Calls into the adapter that fail with its own message ("event_record:
// NULL event or stream", "event_elapsed: NULL event").
polychip_status record_no_event(const polychip_adapter_api* api) {
  polychip_event_args e{};
  e.struct_size = sizeof e;
  return api->event_record(&e);
}
polychip_status elapsed_of_no_events(const polychip_adapter_api* api) {
  polychip_event_elapsed_args e{};
  e.struct_size = sizeof e;
  return api->event_elapsed(&e);
}
polychip_status failing_in_the_adapter(const polychip_kernel_args* a) {
  return elapsed_of_no_events(a->adapter);
}
polychip_status out_of_range_kernel(const polychip_kernel_args*) { return POLYCHIP_STATUS_COUNT_; }
// Trusts its arguments, as a kernel may once the dispatcher checked them.
int g_trusting_kernel_calls = 0;
polychip_status trusting_kernel(const polychip_kernel_args*) {
  ++g_trusting_kernel_calls;
  return POLYCHIP_OK;
}

class DispatcherTest : public ::testing::Test {
 protected:
  RuntimeOptions options() {
    auto o = testing::cpu_only_options();
    o.adapter_path = {kPluginDir + "/adapters"};
    o.selected_adapters = std::vector<std::string>{"cpu", "testplug"};
    return o;
  }
  Runtime rt{options()};
  Device cpu = rt.device("cpu");
  Device plug = rt.device("testplug");
  Dispatcher& disp = rt.dispatcher();
  polychip_op_attrs attrs = default_attrs(*find_op("neg"));

  std::vector<float> run_neg(const Device& d, std::vector<float> in) {
    Tensor x = Tensor::from_host(d, DType::kF32, {static_cast<int64_t>(in.size())}, in.data());
    Tensor y(d, DType::kF32, x.shape());
    Stream s(d);
    disp.call("neg", {x, y}, attrs, s);
    s.synchronize();
    return y.to_vector<float>();
  }
};

TEST_F(DispatcherTest, PatchReplacesAndRestoreRestores) {
  std::vector<float> in = {1, 2, 3};
  uint64_t id = disp.patch("cpu.host", "neg", std::nullopt, plus_hundred, "dispatcher_test");
  EXPECT_EQ(run_neg(cpu, in), (std::vector<float>{101, 102, 103}));
  auto patches = disp.active_patches();
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].origin, "dispatcher_test");
  EXPECT_EQ(patches[0].signature, "*");
  disp.restore(id);
  EXPECT_TRUE(disp.active_patches().empty());
  // Without the patch the adapter's own kernel (if it has one) runs.
  try {
    EXPECT_EQ(run_neg(cpu, in), (std::vector<float>{-1, -2, -3}));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
  }
  EXPECT_THROW(disp.restore(id), Error);
}

TEST_F(DispatcherTest, PatchesStackAndSignaturesSelect) {
  uint64_t a = disp.patch("cpu.host", "neg", std::nullopt, reference_neg, "a");
  uint64_t b = disp.patch("cpu.host", "neg", DTypeSignature{DType::kF64, DType::kF64}, plus_hundred,
                          "b (f64 only)");
  EXPECT_EQ(run_neg(cpu, {4}), std::vector<float>{-4});  // f32 call skips the f64 patch
  uint64_t c = disp.patch("cpu.host", "neg", DTypeSignature{DType::kF32}, plus_hundred, "c");
  EXPECT_EQ(run_neg(cpu, {4}), std::vector<float>{104});  // most recent matching wins
  disp.restore(c);
  EXPECT_EQ(run_neg(cpu, {4}), std::vector<float>{-4});
  disp.restore(b);
  disp.restore(a);
}

TEST_F(DispatcherTest, PatchingUnknownTargetsFailsLoudly) {
  try {
    disp.patch("nvidia.h100", "neg", std::nullopt, plus_hundred, "t");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kNotFound);
    EXPECT_NE(e.message().find("no such device"), std::string::npos);
    EXPECT_NE(e.message().find("cpu.host"), std::string::npos);
  }
  EXPECT_THROW(disp.patch("cpu.host", "negate", std::nullopt, plus_hundred, "t"), Error);
  EXPECT_THROW(disp.patch("cpu.host", "neg", std::nullopt, nullptr, "t"), Error);
  EXPECT_THROW(disp.patch("cpu.host", "neg", DTypeSignature(5, DType::kF32), plus_hundred, "t"),
               Error);
}

// The adapter's own kernel refusing its input: the op, the device, the
// adapter's code and message.
TEST_F(DispatcherTest, AnAdapterKernelsFailureCarriesItsMessage) {
  std::vector<float> logits(6, 0.0f);
  std::vector<int32_t> targets = {1, 7};  // 7: no such class of 3
  Tensor x = Tensor::from_host(cpu, DType::kF32, {2, 3}, logits.data());
  Tensor t = Tensor::from_host(cpu, DType::kI32, {2}, targets.data());
  Tensor loss(cpu, DType::kF32, {2});
  Stream s(cpu);
  testing::expect_error(
      StatusCode::kInvalidArgument,
      "cross_entropy on cpu:0 (cpu.host): adapter 'cpu' cross_entropy failed "
      "with INVALID_ARGUMENT: cross_entropy: 'targets'[1] = 7",
      [&] {
        disp.call("cross_entropy", {x, t, loss}, default_attrs(*find_op("cross_entropy")), s);
      });
}

TEST_F(DispatcherTest, KernelErrorsCarryOpDeviceAndCode) {
  disp.patch("cpu.host", "neg", std::nullopt, failing_kernel, "t");
  try {
    run_neg(cpu, {1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption);
    EXPECT_NE(e.message().find("neg on cpu:0 (cpu.host)"), std::string::npos) << e.message();
  }
}

// A patch has no message channel: its failure names the patch, and quotes
// the adapter's last message only where the patch's own call into the
// adapter set it — not an earlier call's, which it quoted before.
TEST_F(DispatcherTest, AFailingPatchIsNamedAndNeverQuotesAnEarlierCallsMessage) {
  ASSERT_EQ(record_no_event(&cpu.api()), POLYCHIP_INVALID_ARGUMENT);
  const std::string earlier = cpu.api().last_error_message();
  ASSERT_NE(earlier.find("event_record"), std::string::npos) << earlier;
  disp.patch("cpu.host", "neg", std::nullopt, failing_kernel, "the vendor's fix");
  try {
    run_neg(cpu, {1});
    ADD_FAILURE() << "the patch did not fail the call";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption);
    EXPECT_EQ(e.message(),
              "neg on cpu:0 (cpu.host): the patched kernel (the vendor's fix) failed with "
              "DATA_CORRUPTION");
  }
  // A code outside the enum is the patch's bug, kept visible as INTERNAL.
  disp.patch("cpu.host", "neg", std::nullopt, out_of_range_kernel, "x");
  testing::expect_error(StatusCode::kInternal, "the patched kernel (x) failed with UNKNOWN(12)",
                        [&] { run_neg(cpu, {1}); });
  disp.patch("cpu.host", "neg", std::nullopt, failing_in_the_adapter, "a patch calling cpu");
  testing::expect_error(StatusCode::kInvalidArgument,
                        "the patched kernel (a patch calling cpu) failed with INVALID_ARGUMENT: "
                        "event_elapsed: NULL event",
                        [&] { run_neg(cpu, {1}); });
}

TEST_F(DispatcherTest, CallValidationErrorsNameTheArgument) {
  Stream s(cpu);
  Tensor x(cpu, DType::kF32, {3}), y(cpu, DType::kF32, {4}), p(plug, DType::kF32, {3});
  try {
    disp.call("neg", {x, y}, attrs, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("'y' has shape [4]"), std::string::npos) << e.message();
  }
  try {
    disp.call("neg", {x, p}, attrs, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("tensor 'y' is on testplug:0"), std::string::npos) << e.message();
  }
  try {
    disp.call("softmax2", {x, y}, attrs, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kNotFound);
  }
  Stream empty;
  EXPECT_THROW(disp.call("neg", {x, x}, attrs, empty), Error);
}

TEST_F(DispatcherTest, ATensorBeyondTheOpsListIsNamedByPosition) {
  Stream s(cpu);
  Tensor x(cpu, DType::kF32, {3}), p(plug, DType::kF32, {3});
  testing::expect_error(StatusCode::kInvalidArgument, "neg: tensor '?' is on testplug:0", [&] {
    disp.call("neg", {x, x, p}, attrs, s);
  });
}

TEST_F(DispatcherTest, HasKernelSeesPatchesForTheirSignatureOnly) {
  EXPECT_FALSE(disp.has_kernel(plug, "neg", {DType::kF32, DType::kF32}));
  EXPECT_FALSE(disp.has_kernel(plug, "negate", {DType::kF32, DType::kF32}));
  disp.patch("testplug.v1", "neg", DTypeSignature{DType::kF32}, plus_hundred, "t");
  EXPECT_TRUE(disp.has_kernel(plug, "neg", {DType::kF32, DType::kF32}));
  EXPECT_FALSE(disp.has_kernel(plug, "neg", {DType::kF64, DType::kF64}));
}

TEST_F(DispatcherTest, ViewOutsideItsBufferIsRejectedBeforeAnyKernel) {
  disp.patch("cpu.host", "neg", std::nullopt, trusting_kernel, "t");
  Stream s(cpu);
  Buffer buffer(cpu, 4 * sizeof(float));
  Tensor y(cpu, DType::kF32, {4});
  EXPECT_EQ(y.view().memory_size(), 4 * sizeof(float));
  g_trusting_kernel_calls = 0;
  disp.call("neg", {TensorView(buffer, DType::kF32, {4}, {1}), y}, attrs, s);
  EXPECT_EQ(g_trusting_kernel_calls, 1);

  const struct {
    TensorView x;
    const char* message;
  } outside[] = {
      {TensorView(buffer, DType::kF32, {4}, {1}, sizeof(float)),
       "neg: tensor 0 reaches byte 20 but its memory holds 16 bytes"},
      {TensorView(buffer, DType::kF32, {4}, {2}),
       "neg: tensor 0 reaches byte 28 but its memory holds 16 bytes"},
  };
  for (const auto& c : outside) {
    try {
      disp.call("neg", {c.x, y}, attrs, s);
      ADD_FAILURE() << "accepted: " << c.message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(e.message().find(c.message), std::string::npos) << e.message();
    }
  }
  EXPECT_EQ(g_trusting_kernel_calls, 1) << "no kernel ran for a view outside its buffer";
}

TEST_F(DispatcherTest, MissingKernelIsUnsupportedWithoutFallback) {
  try {
    run_neg(plug, {1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(e.message().find("no kernel for neg with dtypes f32,f32 (host fallback is off"),
              std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("POLYCHIP_HOST_FALLBACK"), std::string::npos) << e.message();
  }
  EXPECT_TRUE(disp.fallback_counts().empty());
}

TEST_F(DispatcherTest, HostFallbackRunsOnCpuAndIsCounted) {
  disp.patch("cpu.host", "neg", std::nullopt, reference_neg, "cpu kernel for the test");
  disp.set_host_fallback(true);
  EXPECT_EQ(run_neg(plug, {1, -2, 3}), (std::vector<float>{-1, 2, -3}));
  EXPECT_EQ(run_neg(plug, {5}), (std::vector<float>{-5}));
  // In place: x and y are the same memory, staged once.
  std::vector<float> v = {7, 8};
  Tensor x = Tensor::from_host(plug, DType::kF32, {2}, v.data());
  Stream s(plug);
  disp.call("neg", {x, x}, attrs, s);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{-7, -8}));
  auto counts = disp.fallback_counts();
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].device_type, "testplug.v1");
  EXPECT_EQ(counts[0].op, "neg");
  EXPECT_EQ(counts[0].calls, 3u);
}

// neg for any f32 strides, remembering the memory handles it was given.
std::vector<polychip_memory*> g_neg_memories;
polychip_status strided_neg(const polychip_kernel_args* a) {
  g_neg_memories = {a->tensors[0].memory, a->tensors[1].memory};
  float *x = host_data(a, 0), *y = host_data(a, 1);
  const polychip_tensor& t = a->tensors[0];
  const polychip_tensor& u = a->tensors[1];
  for (int64_t i = 0; i < t.shape[0]; ++i)
    for (int64_t j = 0; j < t.shape[1]; ++j)
      y[i * u.strides[0] + j * u.strides[1]] = -x[i * t.strides[0] + j * t.strides[1]];
  return POLYCHIP_OK;
}

// The fallback copies to cpu buffers exactly the bytes each view touches (a
// strided view ending at its buffer's last byte; two views of one buffer
// staged once, whichever comes first), hands the kernel only cpu memory, and
// copies the outputs back.
TEST_F(DispatcherTest, HostFallbackStagesExactlyTheBytesTheViewsTouch) {
  disp.patch("cpu.host", "neg", std::nullopt, strided_neg, "strided cpu kernel for the test");
  disp.set_host_fallback(true);
  Stream s(plug);
  std::vector<float> values(8);
  std::iota(values.begin(), values.end(), 1.0f);  // 1..8

  // x: elements 1, 3, 5, 7 of an 8-float buffer, as [[1, 3], [5, 7]].
  Buffer a(plug, 8 * sizeof(float));
  a.copy_from_host(values.data(), a.size());
  Buffer b(plug, 4 * sizeof(float));
  TensorView x(a, DType::kF32, {2, 2}, {4, 2}, sizeof(float));
  TensorView y(b, DType::kF32, {2, 2}, {2, 1});
  disp.call("neg", {x, y}, attrs, s);
  s.synchronize();
  std::vector<float> out(4);
  b.copy_to_host(out.data(), b.size());
  EXPECT_EQ(out, (std::vector<float>{-2, -4, -6, -8}));
  for (polychip_memory* m : g_neg_memories) {
    EXPECT_NE(m, a.handle());
    EXPECT_NE(m, b.handle());
  }
  EXPECT_NE(g_neg_memories[0], g_neg_memories[1]);

  // One buffer, x in its upper half and y in its lower half, then the reverse.
  for (bool x_above : {true, false}) {
    a.copy_from_host(values.data(), a.size());
    const uint64_t half = 4 * sizeof(float);
    TensorView upper(a, DType::kF32, {2, 2}, {2, 1}, half), lower(a, DType::kF32, {2, 2}, {2, 1});
    disp.call("neg", {x_above ? upper : lower, x_above ? lower : upper}, attrs, s);
    s.synchronize();
    std::vector<float> all(8);
    a.copy_to_host(all.data(), a.size());
    EXPECT_EQ(all, x_above ? (std::vector<float>{-5, -6, -7, -8, 5, 6, 7, 8})
                           : (std::vector<float>{1, 2, 3, 4, -1, -2, -3, -4}))
        << x_above;
    EXPECT_EQ(g_neg_memories[0], g_neg_memories[1]) << "staged twice";
    EXPECT_NE(g_neg_memories[0], a.handle());
  }
}

TEST_F(DispatcherTest, AFailingKernelInTheHostFallbackNamesTheOpAndTheDevice) {
  disp.patch("cpu.host", "neg", std::nullopt, failing_kernel, "failing cpu kernel");
  disp.set_host_fallback(true);
  testing::expect_error(StatusCode::kDataCorruption, "neg (host fallback for testplug.v1)",
                        [&] { run_neg(plug, {1}); });
}

polychip_status count_hook(const polychip_hook_args* a) {
  ++*static_cast<int*>(a->payload);
  return POLYCHIP_OK;
}
polychip_status failing_hook(const polychip_hook_args*) { return POLYCHIP_INTERNAL; }

TEST_F(DispatcherTest, HooksRunForTheirDeviceTypeOnly) {
  disp.declare_hook_point("model.attention", "choose the attention implementation");
  int calls = 0;
  uint64_t id = disp.register_hook("testplug.v1", "model.attention", count_hook, "vendor x");
  EXPECT_TRUE(disp.invoke_hook("model.attention", plug, &calls));
  EXPECT_FALSE(disp.invoke_hook("model.attention", cpu, &calls));  // default path
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(disp.hooks().size(), 1u);
  EXPECT_EQ(disp.hooks()[0].origin, "vendor x");
  EXPECT_THROW(disp.register_hook("testplug.v1", "model.attention", count_hook, "twice"), Error);
  disp.unregister_hook(id);
  EXPECT_FALSE(disp.invoke_hook("model.attention", plug, &calls));
  EXPECT_THROW(disp.unregister_hook(id), Error);
}

TEST_F(DispatcherTest, UnknownHookPointsAndDeviceTypesFailLoudly) {
  try {
    disp.invoke_hook("model.atention", cpu);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kNotFound);
    EXPECT_NE(e.message().find("unknown hook point 'model.atention'"), std::string::npos);
  }
  EXPECT_THROW(disp.register_hook("cpu.host", "model.atention", count_hook, "x"), Error);
  EXPECT_THROW(disp.register_hook("nvidia.h100", "train.before_forward", count_hook, "x"), Error);
  disp.register_hook("cpu.host", "train.before_forward", failing_hook, "x");
  EXPECT_THROW(disp.invoke_hook("train.before_forward", cpu), Error);
}

polychip_status unsupported_hook(const polychip_hook_args*) { return POLYCHIP_UNSUPPORTED; }
polychip_status out_of_range_hook(const polychip_hook_args*) { return POLYCHIP_STATUS_COUNT_; }

TEST_F(DispatcherTest, AFailingHookKeepsItsStatusCodeIfItIsOne) {
  disp.register_hook("cpu.host", "train.before_forward", unsupported_hook, "x");
  testing::expect_error(StatusCode::kUnsupported,
                        "hook 'train.before_forward' for cpu.host failed with UNSUPPORTED",
                        [&] { disp.invoke_hook("train.before_forward", cpu); });
  disp.register_hook("cpu.host", "train.after_backward", out_of_range_hook, "x");
  testing::expect_error(StatusCode::kInternal, "failed with UNKNOWN(12)",
                        [&] { disp.invoke_hook("train.after_backward", cpu); });
}

// The cpu adapter's table whose kernel_table returns `g_entries` instead.
const polychip_kernel_entry* g_entries = nullptr;
int32_t g_num_entries = 0;
const polychip_adapter_api* cpu_table_listing_g_entries() {
  static const polychip_adapter_api api = [] {
    polychip_adapter_api a = *polychip_cpu_adapter_get_api();
    a.kernel_table = [](polychip_kernel_table_args* args) -> polychip_status {
      args->entries = g_entries;
      args->num_entries = g_num_entries;
      return POLYCHIP_OK;
    };
    return a;
  }();
  return &api;
}

// Whether a fresh runtime (kernel tables are read once per dispatcher) whose
// cpu adapter lists `entries` has a kernel for neg on f32.
bool cpu_lists_neg_f32(std::span<const polychip_kernel_entry> entries) {
  g_entries = entries.data();
  g_num_entries = static_cast<int32_t>(entries.size());
  RuntimeOptions o;
  o.builtin_adapters = {&cpu_table_listing_g_entries};
  Runtime rt(o);
  return rt.dispatcher().has_kernel(rt.device("cpu"), "neg", {DType::kF32, DType::kF32});
}

polychip_kernel_entry neg_entry(int32_t num_dtypes, polychip_dtype first = POLYCHIP_DTYPE_F64) {
  return {sizeof(polychip_kernel_entry), "neg", {first}, num_dtypes, trusting_kernel};
}

TEST(DispatcherKernelTableTest, OnlyTheFirstNumDtypesOfASignatureAreMatched) {
  EXPECT_FALSE(cpu_lists_neg_f32({}));  // no entries and no array: nothing
  const polychip_kernel_entry f64_unchecked[] = {neg_entry(0)};
  EXPECT_TRUE(cpu_lists_neg_f32(f64_unchecked));
  const polychip_kernel_entry f64[] = {neg_entry(1)};
  EXPECT_FALSE(cpu_lists_neg_f32(f64));
  const polychip_kernel_entry any[] = {neg_entry(1, POLYCHIP_DTYPE_ANY)};
  EXPECT_TRUE(cpu_lists_neg_f32(any));
  // Dtypes past the call's tensors are not compared (nor read).
  polychip_kernel_entry longer_than_call = neg_entry(POLYCHIP_MAX_SIGNATURE, POLYCHIP_DTYPE_ANY);
  std::fill_n(longer_than_call.signature + 2, POLYCHIP_MAX_SIGNATURE - 2, POLYCHIP_DTYPE_F64);
  EXPECT_TRUE(cpu_lists_neg_f32({&longer_than_call, 1}));
}

TEST(DispatcherKernelTableTest, AMalformedKernelTableIsAnInternalErrorNamingTheEntry) {
  const polychip_kernel_entry good = neg_entry(0);
  std::vector<polychip_kernel_entry> malformed(4, good);
  malformed[0].num_dtypes = -1;
  malformed[1].num_dtypes = POLYCHIP_MAX_SIGNATURE + 1;
  malformed[2].op = nullptr;
  malformed[3].fn = nullptr;
  for (const polychip_kernel_entry& bad : malformed) {
    const polychip_kernel_entry entries[] = {good, bad};
    testing::expect_error(StatusCode::kInternal, "adapter 'cpu' kernel_table entry 1 is malformed",
                          [&] { cpu_lists_neg_f32(entries); });
  }
  polychip_kernel_entry unknown_op = good;
  unknown_op.op = "negate";
  testing::expect_error(StatusCode::kInternal, "registers a kernel for 'negate', which is not",
                        [&] {
                          cpu_lists_neg_f32({&unknown_op, 1});
                        });
  g_entries = nullptr;
  g_num_entries = 1;
  testing::expect_error(StatusCode::kInternal, "kernel_table returned 1 entries and no array", [&] {
    RuntimeOptions o;
    o.builtin_adapters = {&cpu_table_listing_g_entries};
    Runtime rt(o);
    rt.dispatcher().has_kernel(rt.device("cpu"), "neg", {});
  });
}

TEST(DispatcherPatchLibraryTest, PatchLibraryPatchesAndHooksAreListed) {
  auto o = testing::cpu_only_options();
  std::string lib = kPluginDir + "/patches/libtestpatch_good.so";
  o.patch_libraries = {lib};
  Runtime rt(o);
  EXPECT_TRUE(rt.refused_adapters().empty());
  auto patches = rt.dispatcher().active_patches();
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].op, "neg");
  EXPECT_EQ(patches[0].signature, "f32,f32");
  EXPECT_NE(patches[0].origin.find("test-vendor-patch"), std::string::npos);
  EXPECT_NE(patches[0].origin.find(lib), std::string::npos);
  ASSERT_EQ(rt.dispatcher().hooks().size(), 1u);

  Device cpu = rt.device("cpu");
  std::vector<float> in = {2, -3};
  Tensor x = Tensor::from_host(cpu, DType::kF32, {2}, in.data());
  Tensor y(cpu, DType::kF32, {2});
  Stream s(cpu);
  rt.dispatcher().call("neg", {x, y}, default_attrs(*find_op("neg")), s);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-2, 3}));
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  auto calls = reinterpret_cast<int64_t (*)()>(dlsym(handle, "test_patch_neg_calls"));
  ASSERT_NE(calls, nullptr);
  EXPECT_GE(calls(), 1);  // the library's kernel ran, not the adapter's
  dlclose(handle);
  int64_t steps = 0;
  EXPECT_TRUE(rt.dispatcher().invoke_hook("train.before_optimizer_step", cpu, &steps));
  EXPECT_EQ(steps, 1);
}

// libtestpatch_editable's entries, rewritten per case and loaded by hand
// (a loaded patch library stays loaded: TearDown puts the entries back).
class PatchLibraryEntriesTest : public DispatcherTest {
 protected:
  void SetUp() override {
    ASSERT_NE(handle, nullptr) << dlerror();
    auto entries = reinterpret_cast<void (*)(polychip_patch_entry**, polychip_hook_entry**)>(
        dlsym(handle, "test_patch_entries"));
    ASSERT_NE(entries, nullptr);
    entries(&patch, &hook);
    good_patch = *patch;
    good_hook = *hook;
  }
  void TearDown() override {
    if (!patch) return;
    *patch = good_patch;
    *hook = good_hook;
    dlclose(handle);
  }
  void expect_refused(const std::string& why) {
    testing::expect_error(StatusCode::kInvalidArgument, why, [&] { disp.load_patch_library(lib); });
    EXPECT_TRUE(disp.active_patches().empty()) << why;  // all or nothing
    EXPECT_TRUE(disp.hooks().empty()) << why;
    *patch = good_patch;
    *hook = good_hook;
  }
  const std::string lib = kPluginDir + "/patches/libtestpatch_editable.so";
  void* handle = dlopen(lib.c_str(), RTLD_NOW);
  polychip_patch_entry* patch = nullptr;
  polychip_hook_entry* hook = nullptr;
  polychip_patch_entry good_patch{};
  polychip_hook_entry good_hook{};
};

TEST_F(PatchLibraryEntriesTest, MalformedEntriesRefuseTheWholeLibrary) {
  patch->num_dtypes = -1;
  expect_refused("patch entry 0 is malformed");
  patch->num_dtypes = POLYCHIP_MAX_SIGNATURE + 1;
  expect_refused("patch entry 0 is malformed");
  patch->op = nullptr;
  expect_refused("patch entry 0 is malformed");
  patch->device_type = nullptr;
  expect_refused("patch entry 0 is malformed");
  patch->signature[1] = static_cast<polychip_dtype>(POLYCHIP_DTYPE_COUNT_);
  expect_refused("patch entry 0 has unknown dtype code 12");
  hook->hook_point = nullptr;
  expect_refused("hook entry 0 is malformed");
  hook->device_type = nullptr;
  expect_refused("hook entry 0 is malformed");
}

TEST_F(PatchLibraryEntriesTest, SignatureLengthsFromZeroToTheMaximumAreWellFormed) {
  // The longest signature is well formed; neg's two tensors refuse it.
  std::fill_n(patch->signature, POLYCHIP_MAX_SIGNATURE, POLYCHIP_DTYPE_F32);
  patch->num_dtypes = POLYCHIP_MAX_SIGNATURE;
  expect_refused("patch signature has 8 dtypes but neg takes 2 tensors");
  patch->num_dtypes = 0;  // any dtype, whatever the signature array holds
  disp.load_patch_library(lib);
  ASSERT_EQ(disp.active_patches().size(), 1u);
  EXPECT_EQ(disp.active_patches()[0].signature, "*");
  EXPECT_TRUE(disp.has_kernel(cpu, "neg", {DType::kF64, DType::kF64}));
}

TEST(DispatcherPatchLibraryTest, PatchLibraryThatCannotApplyFailsRuntimeCreation) {
  for (const char* library : {"libtestpatch_bad_target.so", "does_not_exist.so"}) {
    auto o = testing::cpu_only_options();
    o.patch_libraries = {kPluginDir + "/patches/" + library};
    try {
      Runtime rt(o);
      FAIL() << library << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("patch library refused"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find(library), std::string::npos) << e.message();
      EXPECT_NE(e.message().find(library[0] == 'l' ? "nosuch.device" : "cannot load"),
                std::string::npos)
          << e.message();
    }
  }
}

TEST(DispatcherPatchLibraryTest, PolychipInfoListsARefusedPatchLibrary) {
  std::string out;
  FILE* p = popen(("POLYCHIP_PATCHES=" + kPluginDir +
                   "/patches/libtestpatch_bad_target.so " POLYCHIP_CLI " info 2>&1")
                      .c_str(),
                  "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_NE(out.find("patch library refused"), std::string::npos) << out;
  EXPECT_NE(out.find("nosuch.device"), std::string::npos) << out;
}

TEST(DispatcherPatchLibraryTest, PatchLibraryWithUnknownTargetIsRefusedWhole) {
  auto o = testing::cpu_only_options();
  o.patch_libraries = {kPluginDir + "/patches/libtestpatch_bad_target.so",
                       kPluginDir + "/patches/does_not_exist.so"};
  o.refused_patch_library_throws = false;
  Runtime rt(o);
  ASSERT_EQ(rt.refused_adapters().size(), 2u);
  EXPECT_NE(rt.refused_adapters()[0].reason.find("nosuch.device"), std::string::npos)
      << rt.refused_adapters()[0].reason;
  EXPECT_NE(rt.refused_adapters()[1].reason.find("cannot load"), std::string::npos);
  EXPECT_TRUE(rt.dispatcher().active_patches().empty());
  EXPECT_TRUE(rt.dispatcher().hooks().empty());  // all or nothing
}

}  // namespace
}  // namespace polychip
