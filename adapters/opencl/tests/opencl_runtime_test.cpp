// The opencl adapter's runtime side through the HAL on PoCL: device
// properties, memory kinds, copies (synchronous and on streams), events,
// strided and offset views, exact results, and errors for bad input.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>

#include "opencl_test_util.hpp"

namespace polychip::opencl_test {
namespace {

class OpenclRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto dev = opencl_device(&why);
    if (!dev) GTEST_SKIP() << why;
    dev_ = *dev;
  }
  Device dev_;
};

TEST_F(OpenclRuntime, GivenPoclThenDeviceTypeAndPropertiesAreReported) {
  const auto& p = dev_.properties();
  EXPECT_EQ(p.device_type, "opencl.pocl-cpu");
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.memory_bytes, 0u);
  EXPECT_GT(p.compute_units, 0);
  EXPECT_TRUE(p.supports(DType::kF32));
  EXPECT_TRUE(p.supports(DType::kBF16));
  EXPECT_TRUE(p.has(POLYCHIP_CAP_TIMING_EVENTS));
  EXPECT_FALSE(p.has(POLYCHIP_CAP_HOST_VISIBLE_MEMORY));
  EXPECT_NO_THROW(test_runtime().device("opencl.pocl-cpu"));
}

TEST_F(OpenclRuntime, DeviceMemoryIsNotHostVisibleButPinnedHostMemoryIs) {
  Buffer device(dev_, 64);
  try {
    device.host_pointer();
    FAIL() << "device memory must not be host visible";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("not host visible"), std::string::npos) << e.what();
  }
  Buffer pinned(dev_, 64, MemoryKind::kPinnedHost);
  auto* p = static_cast<float*>(pinned.host_pointer());
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 16; ++i) p[i] = static_cast<float>(i);
  // pinned -> device -> host
  device.copy_from(pinned, 64);
  std::vector<float> back(16);
  device.copy_to_host(back.data(), 64);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(back[i], static_cast<float>(i));
  Buffer empty(dev_, 0);
  EXPECT_EQ(empty.size(), 0u);
}

TEST_F(OpenclRuntime, CopiesOnStreamsAreOrderedAndRangeChecked) {
  std::vector<uint8_t> src(1000);
  std::iota(src.begin(), src.end(), 0);
  Buffer a(dev_, 1000), b(dev_, 1000);
  Stream s(dev_);
  a.copy_from_host(src.data(), 1000, 0, &s);
  b.copy_from(a, 500, 100, 200, &s);  // b[200, 700) = a[100, 600)
  std::vector<uint8_t> out(500, 0);
  b.copy_to_host(out.data(), 500, 200, &s);
  s.synchronize();
  for (int i = 0; i < 500; ++i) ASSERT_EQ(out[i], src[100 + i]) << i;
  EXPECT_THROW(a.copy_from_host(src.data(), 1000, 1), Error);
  EXPECT_THROW(b.copy_to_host(out.data(), 10, 995), Error);
}

TEST_F(OpenclRuntime, EventsOrderStreamsAndTimeWork) {
  Stream s1(dev_), s2(dev_);
  Event start(dev_), end(dev_), unrecorded(dev_);
  EXPECT_TRUE(unrecorded.query());
  const int64_t n = 128;
  auto x = upload(dev_, {DType::kF32, {n, n}, random_values(n * n, 1)});
  Tensor y(dev_, DType::kF32, {n, n});
  auto attrs = attrs_of("gemm");
  start.record(s1);
  test_runtime().dispatcher().call("gemm", {x, x, y, y}, attrs, s1);
  end.record(s1);
  // s2 reads y after waiting for s1's gemm.
  end.wait_on(s2);
  Tensor z(dev_, DType::kF32, {n, n});
  test_runtime().dispatcher().call("copy", {y, z}, attrs_of("copy"), s2);
  s2.synchronize();
  EXPECT_TRUE(end.query());
  double ms = Event::elapsed_ms(start, end);
  EXPECT_GT(ms, 0.0);
  EXPECT_LT(ms, 60000.0);
  EXPECT_EQ(download(y), download(z));
  EXPECT_THROW(Event::elapsed_ms(start, unrecorded), Error);
}

TEST_F(OpenclRuntime, GemmSoftmaxLayernormAttentionGiveExactValues) {
  Runtime& rt = test_runtime();
  OpRunner r(rt, dev_);
  // gemm: [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]]; 2x + 0.5 c.
  auto g = attrs_of("gemm");
  g.floats[attr::kAlpha] = 2;
  g.floats[attr::kBeta] = 0.5;
  auto y = r.run("gemm",
                 {{DType::kF32, {2, 2}, {1, 2, 3, 4}},
                  {DType::kF32, {2, 2}, {5, 6, 7, 8}},
                  {DType::kF32, {2, 2}, {2, 4, 6, 8}}},
                 {{DType::kF32, {2, 2}, {}}}, g);
  EXPECT_EQ(y[0], (std::vector<double>{39, 46, 89, 104}));
  // softmax of equal values is uniform; log_softmax of [0, ln 3] over two
  // entries is [-ln 4, ln 3 - ln 4].
  auto sm = r.run("softmax", {{DType::kF32, {2, 4}, {1, 1, 1, 1, 5, 5, 5, 5}}},
                  {{DType::kF32, {2, 4}, {}}}, attrs_of("softmax"));
  for (double v : sm[0]) EXPECT_EQ(v, 0.25);
  // layernorm of [1, 3]: mean 2, var 1, y = [-1, 1] * gamma + beta.
  auto ln = attrs_of("layernorm");
  ln.floats[attr::kEps] = 1e-30;
  auto out = r.run(
      "layernorm",
      {{DType::kF32, {1, 2}, {1, 3}}, {DType::kF32, {2}, {2, 3}}, {DType::kF32, {2}, {0.5, 0.25}}},
      {{DType::kF32, {1, 2}, {}}, {DType::kF32, {1}, {}}, {DType::kF32, {1}, {}}}, ln);
  EXPECT_EQ(out[0], (std::vector<double>{-1.5, 3.25}));
  EXPECT_EQ(out[1][0], 2.0);
  EXPECT_EQ(out[2][0], 1.0);
  // attention with causal mask: query 0 sees key 0 only, so o[0] = v[0];
  // query 1 with q = 0 weighs both keys equally.
  auto at = attrs_of("attention");
  at.floats[attr::kScale] = 0.5;
  at.ints[attr::kCausal] = 1;
  auto o = r.run("attention",
                 {{DType::kF32, {1, 1, 2, 2}, {1, 2, 0, 0}},
                  {DType::kF32, {1, 1, 2, 2}, {3, -1, 2, 5}},
                  {DType::kF32, {1, 1, 2, 2}, {1, 2, 3, 6}}},
                 {{DType::kF32, {1, 1, 2, 2}, {}}, {DType::kF32, {1, 1, 2}, {}}}, at);
  EXPECT_EQ(o[0], (std::vector<double>{1, 2, 2, 4}));
  EXPECT_EQ(o[1][0], 0.5);
  EXPECT_NEAR(o[1][1], std::log(2.0), 1e-7);
}

TEST_F(OpenclRuntime, GemmMayWriteItsOwnInput) {
  // y is a (an exact alias, legal for gemm): a = a @ b with b = 2 I, so
  // every tile must still read the original a.
  const int64_t n = 80;  // more than one 64x64 tile
  std::vector<double> av = random_values(n * n, 7), bv(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) bv[i * n + i] = 2;
  Tensor a = upload(dev_, {DType::kF32, {n, n}, av});
  Tensor b = upload(dev_, {DType::kF32, {n, n}, bv});
  Stream s(dev_);
  test_runtime().dispatcher().call("gemm", {a, b, a, a}, attrs_of("gemm"), s);
  s.synchronize();
  auto out = download(a);
  for (int64_t i = 0; i < n * n; ++i)
    ASSERT_EQ(out[i], 2 * static_cast<double>(static_cast<float>(av[i]))) << i;
}

// The benchmark's kernel switch takes its two names; a misspelt one fails
// the call naming the variable instead of timing the tiled kernel.
TEST_F(OpenclRuntime, GemmKernelSwitchRefusesAnUnknownName) {
  OpRunner r(test_runtime(), dev_);
  const std::vector<HostTensor> in = {
      {DType::kF32, {1, 1}, {3}}, {DType::kF32, {1, 1}, {5}}, {DType::kF32, {1, 1}, {0}}};
  for (const char* name : {"tiled", "naive", ""}) {
    ::setenv("POLYCHIP_OPENCL_GEMM", name, 1);
    EXPECT_EQ(r.run("gemm", in, {{DType::kF32, {1, 1}, {}}}, attrs_of("gemm"))[0][0], 15) << name;
  }
  ::setenv("POLYCHIP_OPENCL_GEMM", "naiv", 1);
  try {
    r.run("gemm", in, {{DType::kF32, {1, 1}, {}}}, attrs_of("gemm"));
    ADD_FAILURE() << "an unknown GEMM kernel name was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("POLYCHIP_OPENCL_GEMM='naiv': expected tiled or naive"),
              std::string::npos)
        << e.what();
  }
  ::unsetenv("POLYCHIP_OPENCL_GEMM");
}

TEST_F(OpenclRuntime, F64SqrtMatchesTheHostsCorrectlyRoundedSqrtAndGeluSiluLimits) {
  OpRunner r(test_runtime(), dev_);
  std::vector<double> x = random_values(4000, 11, 0, 1000);
  auto y = r.run("sqrt", {{DType::kF64, {4000}, x}}, {{DType::kF64, {4000}, {}}}, attrs_of("sqrt"));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(y[0][i], std::sqrt(x[i])) << std::hexfloat << x[i];
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* op : {"gelu", "silu"}) {
    auto v = r.run(op, {{DType::kF32, {2}, {-inf, inf}}}, {{DType::kF32, {2}, {}}}, attrs_of(op));
    EXPECT_EQ(v[0][0], 0.0) << op;
    EXPECT_TRUE(std::signbit(v[0][0])) << op;
    EXPECT_EQ(v[0][1], inf) << op;
  }
}

TEST_F(OpenclRuntime, StridedAndOffsetViewsAreHonoured) {
  Runtime& rt = test_runtime();
  // A [3, 4] tensor at byte offset 16 inside a larger buffer, read through
  // a transposed [4, 3] view.
  std::vector<float> host(20);
  std::iota(host.begin(), host.end(), 0.0f);
  Buffer buf(dev_, host.size() * 4);
  buf.copy_from_host(host.data(), host.size() * 4);
  TensorView xt(dev_, buf.handle(), DType::kF32, {4, 3}, {1, 4}, 16);
  Tensor y(dev_, DType::kF32, {4, 3});
  Stream s(dev_);
  rt.dispatcher().call("neg", {xt, y}, attrs_of("neg"), s);
  s.synchronize();
  auto v = download(y);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(v[i * 3 + j], -(4.0 + j * 4 + i)) << i << "," << j;
  // Reduction over a strided view: sum over axis 0 of the transposed view.
  Tensor r(dev_, DType::kF32, {1, 3});
  auto ra = attrs_of("reduce_sum");
  ra.ints[attr::kAxis] = 0;
  rt.dispatcher().call("reduce_sum", {xt, r}, ra, s);
  s.synchronize();
  auto rv = download(r);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(rv[j], 4 * (4.0 + j * 4) + 6) << j;
  // softmax (contiguous family) of a row-major view at an offset: staged.
  TensorView xo(dev_, buf.handle(), DType::kF32, {2, 4}, {4, 1}, 8);
  Tensor so(dev_, DType::kF32, {2, 4});
  rt.dispatcher().call("softmax", {xo, so}, attrs_of("softmax"), s);
  s.synchronize();
  auto sv = download(so);
  double denom = 0;
  for (int k = 0; k < 4; ++k) denom += std::exp(k - 3.0);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(sv[k], std::exp(k - 3.0) / denom, 1e-6);
  // An output at an offset is written back in place, leaving the rest.
  TensorView yo(dev_, buf.handle(), DType::kF32, {1, 4}, {4, 1}, 48);
  Tensor src = upload(dev_, {DType::kF32, {1, 4}, {9, 9, 9, 9}});
  rt.dispatcher().call("log_softmax", {src, yo}, attrs_of("log_softmax"), s);
  s.synchronize();
  std::vector<float> after(20);
  buf.copy_to_host(after.data(), 80);
  for (int k = 0; k < 20; ++k) {
    if (k >= 12 && k < 16)
      EXPECT_NEAR(after[k], -std::log(4.0), 1e-6);
    else
      EXPECT_EQ(after[k], host[k]) << k;
  }
}

TEST_F(OpenclRuntime, OutOfRangeIndicesAreErrorsNamingTheRow) {
  OpRunner r(test_runtime(), dev_);
  try {
    r.run("cross_entropy",
          {{DType::kF32, {3, 4}, std::vector<double>(12, 0.0)}, {DType::kI64, {3}, {0, 4, 1}}},
          {{DType::kF32, {3}, {}}}, attrs_of("cross_entropy"));
    FAIL() << "target 4 with 4 classes must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("targets[1]"), std::string::npos) << e.what();
  }
  try {
    r.run("embedding", {{DType::kI32, {2}, {-1, 0}}, {DType::kF32, {3, 2}, std::vector<double>(6)}},
          {{DType::kF32, {2, 2}, {}}}, attrs_of("embedding"));
    FAIL() << "id -1 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("ids[0]"), std::string::npos) << e.what();
  }
}

TEST_F(OpenclRuntime, BadCallsThroughTheAbiAreRefusedWithAMessage) {
  const polychip_adapter_api& api = dev_.api();
  polychip_memory_allocate_args m{};
  m.struct_size = sizeof m;
  m.device = 99;
  m.size_bytes = 16;
  EXPECT_EQ(api.memory_allocate(&m), POLYCHIP_NOT_FOUND);
  EXPECT_NE(std::string(api.last_error_message()).find("device index 99"), std::string::npos);
  m.device = dev_.index();
  m.size_bytes = ~uint64_t{0};
  EXPECT_EQ(api.memory_allocate(&m), POLYCHIP_OUT_OF_MEMORY);
  EXPECT_EQ(api.copy(nullptr), POLYCHIP_INVALID_ARGUMENT);
  polychip_kernel_args k{};
  k.struct_size = sizeof k;
  k.op = "gemm";
  EXPECT_EQ(api.kernel_table(nullptr), POLYCHIP_INVALID_ARGUMENT);
  // A direct kernel call without a stream is refused, not crashed.
  polychip_kernel_table_args t{};
  t.struct_size = sizeof t;
  t.device = dev_.index();
  ASSERT_EQ(api.kernel_table(&t), POLYCHIP_OK);
  ASSERT_GT(t.num_entries, 100);
  EXPECT_EQ(t.entries[0].fn(&k), POLYCHIP_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api.last_error_message()).find("stream"), std::string::npos);
}

TEST_F(OpenclRuntime, ViewsOutsideTheirMemoryAreRefusedThroughTheAbi) {
  // A framework calling the C ABI directly: no HAL checked these views, so
  // without the adapter's own check PoCL would read and write past the
  // buffers.
  const polychip_adapter_api& api = dev_.api();
  polychip_kernel_table_args table{};
  table.struct_size = sizeof table;
  table.device = dev_.index();
  ASSERT_EQ(api.kernel_table(&table), POLYCHIP_OK);
  const polychip_kernel_entry* neg = nullptr;
  for (int i = 0; i < table.num_entries; ++i)
    if (std::strcmp(table.entries[i].op, "neg") == 0 &&
        table.entries[i].signature[0] == POLYCHIP_DTYPE_F32)
      neg = &table.entries[i];
  ASSERT_NE(neg, nullptr);

  Buffer x(dev_, 16 * 4), y(dev_, 16 * 4);
  Stream s(dev_);
  const polychip_op_attrs attrs = attrs_of("neg");
  auto call_neg = [&](const TensorView& in, const TensorView& out) {
    const polychip_tensor tensors[] = {in.to_abi(), out.to_abi()};
    polychip_kernel_args k{};
    k.struct_size = sizeof k;
    k.op = "neg";
    k.device = dev_.index();
    k.stream = s.handle();
    k.tensors = tensors;
    k.num_tensors = 2;
    k.attrs = &attrs;
    k.adapter = &api;
    return neg->fn(&k);
  };
  auto view = [&](const Buffer& b, Shape strides, uint64_t byte_offset) {
    return TensorView(dev_, b.handle(), DType::kF32, {16}, std::move(strides), byte_offset);
  };
  ASSERT_EQ(call_neg(view(x, {1}, 0), view(y, {1}, 0)), POLYCHIP_OK) << api.last_error_message();

  const struct {
    TensorView in, out;
    const char* message;
  } outside[] = {
      {view(x, {1}, 4), view(y, {1}, 0), "tensor 0 reaches byte 68 but its memory holds 64 bytes"},
      {view(x, {2}, 0), view(y, {1}, 0), "tensor 0 reaches byte 124 but its memory holds 64 bytes"},
      {view(x, {1}, 0), view(y, {1}, 8), "tensor 1 reaches byte 72 but its memory holds 64 bytes"},
      {view(x, {1}, uint64_t{1} << 40), view(y, {1}, 0), "tensor 0 reaches byte 1099511627840"},
  };
  for (const auto& c : outside) {
    EXPECT_EQ(call_neg(c.in, c.out), POLYCHIP_INVALID_ARGUMENT) << c.message;
    EXPECT_NE(std::string(api.last_error_message()).find(c.message), std::string::npos)
        << api.last_error_message();
  }
  s.synchronize();
}

}  // namespace
}  // namespace polychip::opencl_test
