// Sim streams run work asynchronously on a worker thread; events order
// streams and measure time.
#include <numeric>

#include "sim_test_util.hpp"

namespace polychip::testing {
namespace {

TEST_F(SimTest, AsyncCopiesAndCrossStreamEventOrdering) {
  const Device dev = rt.device("sim.faithful");
  const size_t n = 8 << 20;  // big enough that an unordered copy would race
  std::vector<uint32_t> in(n), out(n, 0);
  std::iota(in.begin(), in.end(), 5u);
  Buffer a(dev, n * 4), b(dev, n * 4);
  Stream s1(dev), s2(dev);
  Event written(dev);
  a.copy_from_host(in.data(), n * 4, 0, &s1);
  written.record(s1);
  written.wait_on(s2);
  b.copy_from(a, n * 4, 0, 0, &s2);
  b.copy_to_host(out.data(), n * 4, 0, &s2);
  s2.synchronize();
  EXPECT_TRUE(written.query());
  EXPECT_EQ(out, in);
}

TEST_F(SimTest, EventsMeasureStreamTime) {
  const Device dev = rt.device("sim.naive_softmax");
  Stream s(dev);
  Event start(dev), end(dev);
  EXPECT_THROW(Event::elapsed_ms(start, end), Error);  // never recorded
  const size_t bytes = 32 << 20;
  std::vector<char> host(bytes, 1);
  Buffer buf(dev, bytes);
  start.record(s);
  for (int i = 0; i < 4; ++i) buf.copy_from_host(host.data(), bytes, 0, &s);
  end.record(s);
  end.synchronize();
  EXPECT_TRUE(start.query());
  EXPECT_TRUE(end.query());
  const double ms = Event::elapsed_ms(start, end);
  EXPECT_GT(ms, 0.0);
  EXPECT_LT(ms, 60000.0);
}

TEST_F(SimTest, KernelsRunInStreamOrder) {
  // A copy queued on the stream must land before the kernel reads it.
  OpRunner run = runner("sim.faithful");
  const Device dev = run.device();
  Stream s(dev);
  std::vector<float> host(1 << 20, 2.0f);
  Tensor x(dev, DType::kF32, {1 << 20}), y(dev, DType::kF32, {1 << 20});
  x.buffer().copy_from_host(host.data(), host.size() * 4, 0, &s);
  rt.dispatcher().call("mul", {x, x, y}, run.attrs("mul"), s);
  std::vector<float> out(host.size());
  y.buffer().copy_to_host(out.data(), out.size() * 4, 0, &s);
  s.synchronize();
  EXPECT_EQ(out.front(), 4.0f);
  EXPECT_EQ(out.back(), 4.0f);
}

TEST_F(SimTest, KernelErrorsCarryTheKernelsMessage) {
  OpRunner run = runner("sim.faithful");
  auto ids = run.make(DType::kI64, {2}, {0, -3});
  auto w = run.make(DType::kF32, {2, 2}, {1, 2, 3, 4});
  auto out = run.empty(DType::kF32, {2, 2});
  try {
    run.call("embedding", {ids, w, out});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("'ids'[1] = -3 is outside [0, 2)"), std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace polychip::testing
