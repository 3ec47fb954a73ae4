// DeviceTensor on the cpu device: the layout of each kind of tensor (strides,
// offset of the first element, bytes allocated with both guard bands), that
// values survive the trip up and down, and the message that names a byte a
// kernel changed outside the elements.
#include "device_io.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "polychip/hal.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace polychip::precision {
namespace {

constexpr uint64_t kG = kGuardBytes;

// Values 0, 1, 2, ... row-major; with `broadcast`, every row the same (the
// column index), as a broadcast operand must be.
HostTensor counting(DType dtype, const Shape& shape, bool broadcast) {
  HostTensor t{dtype, shape, {}};
  const int64_t n = element_count(shape), row = shape.empty() ? 1 : shape.back();
  for (int64_t i = 0; i < n; ++i) t.values.push_back(static_cast<double>(broadcast ? i % row : i));
  return t;
}

class DeviceIoTest : public ::testing::Test {
 protected:
  DeviceIoTest() : runtime_(options()), device_(runtime_.device("cpu")) {}
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.builtin_adapters = {&polychip_cpu_adapter_get_api};
    return o;
  }
  // The bytes of the tensor's allocation (the cpu adapter's memory is host
  // visible), from its first guard byte.
  static uint8_t* allocation(const TensorView& view) {
    polychip_memory_host_pointer_args a{};
    a.struct_size = sizeof a;
    a.memory = view.memory();
    EXPECT_EQ(view.device().api().memory_host_pointer(&a), POLYCHIP_OK);
    return static_cast<uint8_t*>(a.host_pointer);
  }

  Runtime runtime_;
  Device device_;
};

struct Layout {
  const char* what;
  DType dtype;
  Shape shape;
  bool strided, broadcast;
  Shape strides;         // in elements
  uint64_t byte_offset;  // of element [0, ...]
  uint64_t memory_size;  // guard bands included
};
// clang-format off
const Layout kLayouts[] = {
    {"contiguous",          DType::kF32, {3, 4}, false, false, {4, 1}, kG,     kG + 12 * 4 + kG},
    // Every other element, one spare element between rows and at both ends.
    {"strided",             DType::kF32, {3, 4}, true,  false, {9, 2}, kG + 4, kG + 4 + (2 * 9 + 3 * 2 + 1) * 4 + 4 + kG},
    {"strided f16",         DType::kF16, {2, 3}, true,  false, {7, 2}, kG + 2, kG + 2 + (7 + 2 * 2 + 1) * 2 + 2 + kG},
    {"strided 1-D",         DType::kF32, {5},    true,  false, {2},    kG + 4, kG + 4 + (4 * 2 + 1) * 4 + 4 + kG},
    {"strided scalar",      DType::kF32, {},     true,  false, {},     kG + 4, kG + 4 + 4 + 4 + kG},
    // Broadcast: dimension 0 is the same memory, one row is allocated.
    {"broadcast",           DType::kF32, {3, 4}, false, true,  {0, 1}, kG,     kG + 4 * 4 + kG},
    {"strided broadcast",   DType::kF32, {3, 4}, true,  true,  {0, 2}, kG + 4, kG + 4 + (3 * 2 + 1) * 4 + 4 + kG},
    // Empty: no element, so no spare after one either (only the leading one).
    {"empty",               DType::kF32, {0},    false, false, {1},    kG,     kG + kG},
    {"empty rows, strided", DType::kF32, {0, 3}, true,  false, {7, 2}, kG + 4, kG + 4 + kG},
    {"empty row, strided",  DType::kF32, {2, 0}, true,  false, {1, 2}, kG + 4, kG + 4 + kG},
};
// clang-format on

TEST_F(DeviceIoTest, EachKindOfTensorHasItsLayoutAndItsValuesComeBack) {
  for (const Layout& l : kLayouts) {
    SCOPED_TRACE(l.what);
    const HostTensor host = counting(l.dtype, l.shape, l.broadcast);
    const DeviceTensor t(device_, host, l.strided, true, l.broadcast);
    const TensorView v = t.view();
    EXPECT_EQ(v.dtype(), l.dtype);
    EXPECT_EQ(v.shape(), l.shape);
    EXPECT_EQ(v.strides(), l.strides);
    EXPECT_EQ(v.byte_offset(), l.byte_offset);
    EXPECT_EQ(v.memory_size(), l.memory_size);
    EXPECT_EQ(t.download().values, host.values);
    EXPECT_EQ(t.check_canary(), "");
  }
}

struct StrayWrite {
  const char* what;
  Shape shape;
  bool strided;
  int64_t at;         // byte written, counted from the first element's first byte
  const char* where;  // what check_canary names; nullptr: nothing (inside an element)
};
// clang-format off
const StrayWrite kStrayWrites[] = {
    {"inside an element",             {3},    false, 5,       nullptr},
    {"just before",                   {3},    false, -1,      "1 byte(s) before its first element"},
    {"first byte of the allocation",  {3},    false, -256,    "256 byte(s) before its first element"},
    {"just past",                     {3},    false, 12,      "1 byte(s) past its last element (element offset +1)"},
    {"last byte of the allocation",   {3},    false, 12 + 255, "256 byte(s) past its last element (element offset +64)"},
    // Strided 2x3: elements at 0, 2, 4, 7, 9 and 11 (f32: bytes 0-3, 8-11, ...).
    {"gap within a row",              {2, 3}, true,  4,       "in a gap between its elements, byte 4 after the first"},
    {"gap between rows",              {2, 3}, true,  24,      "in a gap between its elements, byte 24 after the first"},
    {"leading spare element",         {2, 3}, true,  -4,      "4 byte(s) before its first element"},
    {"trailing spare element",        {2, 3}, true,  48,      "1 byte(s) past its last element (element offset +1)"},
    {"last byte, strided",            {2, 3}, true,  48 + 4 + 255, "260 byte(s) past its last element (element offset +65)"},
    // No element: the first byte after the leading guard is past the end.
    {"empty tensor",                  {0},    false, 0,       "1 byte(s) past its last element (element offset +1)"},
};
// clang-format on

TEST_F(DeviceIoTest, AChangedByteOutsideTheElementsIsNamedByItsDistanceFromThem) {
  for (const StrayWrite& w : kStrayWrites) {
    SCOPED_TRACE(w.what);
    const DeviceTensor t(device_, counting(DType::kF32, w.shape, false), w.strided, true);
    const TensorView v = t.view();
    const int64_t byte = static_cast<int64_t>(v.byte_offset()) + w.at;
    // (Inside the allocation, whatever a broken layout computed.)
    ASSERT_GE(byte, 0);
    ASSERT_LT(static_cast<uint64_t>(byte), v.memory_size().value_or(0));
    allocation(v)[byte] = 0x00;
    EXPECT_EQ(t.check_canary(),
              w.where
                  ? fmt::format("a write outside its elements: {} changed 0xff to 0x00", w.where)
                  : "");
  }
}

}  // namespace
}  // namespace polychip::precision
