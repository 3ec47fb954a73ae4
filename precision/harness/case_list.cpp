#include "case_list.hpp"

#include <set>

#include <fmt/format.h>

#include "exhaustive_unary.hpp"
#include "op_factors.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::precision {
namespace {

constexpr DType kHalfAndSingle[] = {DType::kF32, DType::kF16, DType::kBF16};

// Lengths where vendors' loops break: 2^k - 1, 2^k, 2^k + 1 around vector
// widths (16 to 64 elements), block sizes (256) and the 16-bit boundary.
constexpr int64_t kCriticalLengths[] = {15, 16,  17,  31,  32,    33,    63,   64,
                                        65, 255, 256, 257, 65535, 65536, 65537};
// Row lengths of real models: GPT-2's vocabulary, hidden sizes 4,096 and
// 8,192, and one past a 4,096 block.
constexpr int64_t kLongRows[] = {4096, 4097, 8192, 50257};

class Builder {
 public:
  explicit Builder(Level level) : level_(level) {}
  // Adds the case (and its extra seeds) unless an identical one exists.
  void add(const char* op, DType dt, Shape dims, std::vector<std::string> variant = {},
           uint64_t seed = 1) {
    for (uint64_t s = seed; s < seed + extra_seeds(); ++s) {
      CaseSpec spec{op, dt, dims, variant, s};
      if (ids_.insert(case_id(spec)).second) cases_.push_back(std::move(spec));
    }
  }
  // f32/f16/bf16 (and f64 from the standard level on).
  void add_floats(const char* op, Shape dims, std::vector<std::string> variant = {}) {
    for (DType dt : kHalfAndSingle) add(op, dt, dims, variant);
    if (level_ != Level::kQuick) add(op, DType::kF64, dims, variant);
  }
  // Adds exactly this case (no extra seeds) unless an identical one exists.
  void add_once(CaseSpec spec) {
    if (ids_.insert(case_id(spec)).second) cases_.push_back(std::move(spec));
  }
  bool at_least(Level l) const { return static_cast<int>(level_) >= static_cast<int>(l); }
  std::vector<CaseSpec> take() { return std::move(cases_); }

 private:
  uint64_t extra_seeds() const {
    return level_ == Level::kQuick ? 1 : level_ == Level::kStandard ? 2 : 4;
  }
  Level level_;
  std::vector<CaseSpec> cases_;
  std::set<std::string> ids_;
};

void elementwise(Builder& b) {
  const char* unary[] = {"neg",  "exp",     "log",  "sqrt", "rsqrt",
                         "tanh", "sigmoid", "relu", "gelu", "silu"};
  for (const char* op : unary) {
    for (int64_t n : kCriticalLengths) b.add(op, DType::kF32, {n});
    // Every f16 and bf16 input, as the OpenCL CTS checks every input.
    for (DType dt : {DType::kF16, DType::kBF16}) b.add(op, dt, {65536}, {"exhaustive"});
    b.add_floats(op, {1000});
    b.add(op, DType::kF32, {999}, {"special"});
    b.add(op, DType::kF32, {17, 31}, {"strided"});
    if (b.at_least(Level::kStandard)) {
      b.add(op, DType::kF16, {999}, {"special"});
      b.add(op, DType::kBF16, {999}, {"special"});
      b.add(op, DType::kF32, {4096}, {"wide"});
    }
  }
  b.add("gelu", DType::kF32, {1000}, {"tanh"});
  b.add("gelu", DType::kBF16, {1000}, {"tanh"});
  // exp/log over the whole range: overflow, underflow to subnormals.
  for (DType dt : kHalfAndSingle) {
    b.add("exp", dt, {2000}, {"wide"});
    b.add("log", dt, {2000}, {"wide"});
  }
  b.add("log", DType::kF16, {999}, {"special"});
  b.add("exp", DType::kF64, {1000});
  b.add("log", DType::kF64, {1000});
  for (const char* op : {"add", "sub", "mul", "div"}) {
    for (int64_t n : kCriticalLengths) b.add(op, DType::kF32, {n});
    b.add(op, DType::kF32, {17, 33}, {"broadcast"});
    b.add_floats(op, {1000});
    b.add(op, DType::kF32, {999}, {"special"});
    b.add(op, DType::kF32, {17, 31}, {"strided"});
    if (b.at_least(Level::kStandard)) b.add(op, DType::kF32, {4096}, {"wide"});
  }
  for (const char* op :
       {"relu_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward"})
    b.add_floats(op, {1000});
  b.add("gelu_backward", DType::kF32, {1000}, {"tanh"});
  // Edge shapes: empty, one element, primes, higher rank.
  b.add("add", DType::kF32, {0});
  b.add("exp", DType::kF32, {1});
  b.add("mul", DType::kF16, {3, 5, 7});
  b.add("relu", DType::kBF16, {0, 3});
  b.add("relu", DType::kBF16, {2, 0, 3});

  b.add("cast", DType::kF32, {1000}, {"wide", "to=f16"});
  b.add("cast", DType::kF32, {999}, {"special", "to=bf16"});
  b.add("cast", DType::kF16, {1000}, {"to=f32"});
  b.add("cast", DType::kBF16, {1000}, {"to=f32"});
  b.add("cast", DType::kF64, {1000}, {"wide", "to=f32"});
  b.add("cast", DType::kF32, {17, 31}, {"strided", "to=bf16"});
  if (b.at_least(Level::kStandard)) {
    b.add("cast", DType::kF32, {1000}, {"to=f8e4m3"});
    b.add("cast", DType::kF32, {1000}, {"to=f8e5m2"});
    b.add("cast", DType::kF16, {999}, {"special", "to=bf16"});
  }
  b.add_floats("fill", {1000});
  b.add("fill", DType::kF16, {100}, {"special"});
  b.add("copy", DType::kF32, {17, 31}, {"strided"});
  b.add("copy", DType::kF16, {1000});
  b.add("copy", DType::kBF16, {5, 7, 11}, {"strided"});
}

void reductions(Builder& b) {
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "argmax", "l2_norm"}) {
    b.add_floats(op, {16, 256});
    b.add(op, DType::kF32, {33, 65}, {"axis0"});
    b.add(op, DType::kF32, {7, 129}, {"strided"});
    if (b.at_least(Level::kStandard)) b.add(op, DType::kF32, {4, 8192});
  }
  b.add("reduce_sum", DType::kF32, {1, 1});
  b.add("reduce_sum", DType::kF64, {16, 256});
  b.add("argmax", DType::kF32, {16, 256}, {"i32"});
  for (int64_t len : kLongRows) b.add("reduce_sum", DType::kF32, {2, len});
  for (const char* op : {"reduce_mean", "reduce_max", "argmax", "l2_norm"})
    b.add(op, DType::kF32, {2, 50257});
  b.add("reduce_sum", DType::kF32, {4, 50257}, {"exact"});
  b.add("reduce_sum", DType::kF32, {33, 65}, {"exact", "axis0"});
  b.add("reduce_sum", DType::kF16, {16, 256}, {"exact"});
  b.add("reduce_sum", DType::kBF16, {16, 64}, {"exact"});
}

void softmax_family(Builder& b) {
  for (const char* op : {"softmax", "log_softmax"}) {
    b.add_floats(op, {16, 256});
    for (DType dt : kHalfAndSingle) b.add(op, dt, {8, 128}, {"large"});
    b.add(op, DType::kF32, {24, 5}, {"axis0"});
  }
  b.add("softmax", DType::kF64, {16, 256});
  for (const char* op : {"softmax", "log_softmax"}) {
    for (int64_t len : kLongRows) b.add(op, DType::kF32, {2, len});
    b.add(op, DType::kF16, {2, 4097});
    b.add(op, DType::kBF16, {2, 8192});
  }
  for (const char* op : {"softmax_backward", "log_softmax_backward"}) {
    b.add(op, DType::kF32, {2, 50257});
    b.add(op, DType::kF32, {24, 5}, {"axis0"});
  }
  for (const char* op : {"softmax_backward", "log_softmax_backward"}) b.add_floats(op, {16, 256});
}

void norms(Builder& b) {
  for (const char* op : {"layernorm", "rmsnorm"}) {
    b.add_floats(op, {16, 256});
    b.add(op, DType::kF32, {7, 1023});
  }
  for (DType dt : kHalfAndSingle) b.add("layernorm", dt, {16, 256}, {"offset"});
  b.add("layernorm", DType::kF64, {16, 256}, {"offset"});
  b.add("rmsnorm", DType::kF32, {16, 256}, {"offset"});
  for (const char* op : {"layernorm", "rmsnorm"}) {
    for (DType dt : kHalfAndSingle) b.add(op, dt, {16, 256}, {"eps"});
    for (int64_t len : kLongRows) b.add(op, DType::kF32, {2, len});
  }
  for (const char* op : {"layernorm_backward", "rmsnorm_backward"}) {
    b.add_floats(op, {16, 256});
    b.add(op, DType::kF32, {2, 8192});
  }
}

void training_ops(Builder& b) {
  // gemm: square, primes with transposes and beta, batched, large K, edges.
  b.add_floats("gemm", {64, 64, 64});
  b.add("gemm", DType::kF64, {64, 64, 64});
  b.add("gemm", DType::kF32, {33, 17, 129}, {"ta", "tb", "beta"});
  b.add("gemm", DType::kBF16, {31, 29, 256}, {"tb", "alpha", "beta"});
  b.add("gemm", DType::kF16, {3, 16, 24, 40}, {"ta"});
  b.add("gemm", DType::kF32, {4, 4, 1024});
  b.add("gemm", DType::kF32, {1, 1, 1});
  b.add("gemm", DType::kF32, {4, 5, 0}, {"beta"});
  b.add("gemm", DType::kF32, {0, 5, 3});
  // Exact integers (tolerance 0): sums stay below 2^24 (f32), 2^11 (f16), 2^8 (bf16).
  b.add("gemm", DType::kF32, {64, 64, 1024}, {"exact"});
  b.add("gemm", DType::kF32, {33, 17, 129}, {"exact", "ta", "tb", "alpha", "beta"});
  b.add("gemm", DType::kF32, {3, 16, 24, 40}, {"exact", "ta"});
  b.add("gemm", DType::kF16, {16, 16, 64}, {"exact"});
  b.add("gemm", DType::kBF16, {8, 8, 16}, {"exact", "tb"});
  b.add("gemm", DType::kF32, {64, 64, 64}, {"tf32"});
  b.add("gemm", DType::kBF16, {64, 64, 256}, {"rpr"});
  if (b.at_least(Level::kStandard)) {
    b.add("gemm", DType::kF32, {8, 8, 8192});
    b.add("gemm", DType::kF32, {64, 64, 64}, {"special"});
  }
  if (b.at_least(Level::kFull)) b.add_floats("gemm", {256, 256, 256});

  for (const char* op : {"cross_entropy", "cross_entropy_backward"}) b.add_floats(op, {16, 512});
  b.add("cross_entropy", DType::kF32, {16, 512}, {"large"});
  b.add("cross_entropy", DType::kF32, {16, 512}, {"i32"});
  for (const char* op : {"cross_entropy", "cross_entropy_backward"})
    b.add(op, DType::kF32, {2, 50257});
  for (const char* op : {"embedding", "embedding_backward"}) b.add_floats(op, {64, 100, 32});
  // Repeated and edge ids (0, V-1) in a small and in GPT-2's vocabulary.
  b.add("embedding_backward", DType::kF32, {64, 8, 16}, {"repeated"});
  // (16,384 ids keep more than 10% of the 50,257 rows non-zero: trusted.)
  b.add("embedding_backward", DType::kBF16, {16384, 50257, 4}, {"repeated"});
  for (DType dt : {DType::kF32, DType::kBF16})
    b.add("embedding_backward", dt, {64, 8, 16}, {"exact", "repeated"});
  b.add("embedding", DType::kF32, {64, 100, 32}, {"i32"});
  b.add_floats("rotary_embedding", {16, 4, 64});
  b.add("rotary_embedding", DType::kF32, {16, 4, 64}, {"inverse"});
  for (const char* op : {"attention", "attention_backward"}) b.add_floats(op, {1, 2, 64, 32});
  for (const char* op : {"attention", "attention_backward"})
    b.add(op, DType::kF32, {2, 2, 33, 16}, {"noncausal"});
  b.add("attention", DType::kF64, {1, 2, 64, 32});
  b.add_floats("adamw", {1000});
  b.add("adamw", DType::kF32, {1000}, {"attrs"});  // lr, betas, eps, weight decay, step 1000
  if (b.at_least(Level::kStandard)) {
    b.add_floats("attention", {2, 4, 128, 64});
    b.add_floats("layernorm", {64, 1024});
  }
}

// Exact-integer attention and norms (exact_inputs.hpp; tolerance 0):
// every query row attends to exactly one key that q and k select; norm rows
// whose mean, variance and rstd are exact, at a real model's hidden size too.
void exact_attention_and_norms(Builder& b) {
  b.add("attention", DType::kF32, {2, 2, 64, 32}, {"exact", "noncausal"});
  b.add("attention", DType::kF32, {1, 2, 64, 16}, {"exact"});
  b.add("attention", DType::kF16, {1, 2, 16, 16}, {"exact", "noncausal"});
  b.add("attention", DType::kBF16, {1, 2, 64, 64}, {"exact", "noncausal"});
  for (const char* op : {"layernorm", "rmsnorm"}) {
    b.add(op, DType::kF32, {16, 1024}, {"exact"});
    b.add(op, DType::kF32, {2, 4096}, {"exact"});
    b.add(op, DType::kF16, {16, 256}, {"exact"});
    b.add(op, DType::kBF16, {16, 64}, {"exact"});
  }
  b.add("rmsnorm", DType::kF32, {16, 1023}, {"exact"});
}

// The critical points of the coverage model (coverage.hpp) the cases above
// leave open: empty and sub-vector lengths, 2^k ± 1 tails and real model
// lengths for every op's longest loop, strided views of the backward ops,
// special values in gemm. One f32 case per point keeps quick fast.
void coverage_points(Builder& b) {
  const char* elementwise_ops[] = {"neg",  "exp",  "log",  "sqrt", "rsqrt", "tanh", "sigmoid",
                                   "relu", "gelu", "silu", "add",  "sub",   "mul",  "div"};
  for (const char* op : elementwise_ops) b.add(op, DType::kF32, {0});
  for (const char* op : {"relu_backward", "gelu_backward", "silu_backward", "sigmoid_backward",
                         "tanh_backward", "copy"}) {
    for (int64_t n : {int64_t{0}, int64_t{7}, int64_t{127}, int64_t{4097}})
      b.add(op, DType::kF32, {n});
    b.add(op, DType::kF32, {17, 31}, {"strided"});
  }
  for (int64_t n : {int64_t{0}, int64_t{7}, int64_t{127}, int64_t{4097}})
    b.add("cast", DType::kF32, {n}, {"to=bf16"});
  b.add("fill", DType::kF32, {0});
  b.add("fill", DType::kF32, {7});
  for (const char* op :
       {"reduce_sum", "reduce_mean", "reduce_max", "argmax", "l2_norm", "softmax", "log_softmax"})
    b.add(op, DType::kF32, {4, 1023});
  for (const char* op :
       {"softmax_backward", "log_softmax_backward", "layernorm_backward", "rmsnorm_backward"}) {
    b.add(op, DType::kF32, {4, 1023});
    b.add(op, DType::kF32, {4, 1025});
  }
  for (const char* op : {"cross_entropy", "cross_entropy_backward"}) {
    b.add(op, DType::kF32, {16, 1023});
    b.add(op, DType::kF32, {16, 1025});
  }
  b.add("gemm", DType::kF32, {16, 16, 127});
  b.add("gemm", DType::kF32, {8, 8, 4096});
  b.add("gemm", DType::kF32, {16, 16, 64}, {"special"});
  for (const char* op : {"attention", "attention_backward"}) {
    b.add(op, DType::kF32, {1, 2, 63, 32});
    b.add(op, DType::kF32, {1, 1, 1024, 64});
  }
  for (const char* op : {"embedding", "embedding_backward"}) {
    b.add(op, DType::kF32, {64, 100, 31});
    b.add(op, DType::kF32, {16, 100, 4097});
  }
  b.add("rotary_embedding", DType::kF32, {4, 2, 126});
  b.add("rotary_embedding", DType::kF32, {4, 2, 130});
  b.add("rotary_embedding", DType::kF32, {2, 1, 8192});
  b.add("adamw", DType::kF32, {127});
  b.add("adamw", DType::kF32, {4097});
}

// Standard: seeded random shapes (and layouts) for every op, drawn around
// the lengths where kernels break and in between. The case id spells the
// drawn shape and variant, so `--case ID` reproduces any failure; the draw
// itself is seeded by kShapeFuzzSeed, so every run of a level has the same cases.
constexpr uint64_t kShapeFuzzSeed = 20261124;
static_assert(kFirstFuzzedSeed + 100 < kFirstCrossedSeed);
constexpr int kShapesPerOp = 3;

class ShapeFuzzer {
 public:
  explicit ShapeFuzzer(uint64_t seed) : state_(seed) {}
  // A loop length: a critical one (2^k - 1, 2^k, 2^k + 1) half the time,
  // else uniform in [1, max].
  int64_t length(int64_t max) {
    if (next() % 2 == 0) {
      const int k = 1 + static_cast<int>(next() % 11);  // 2 .. 2048
      const int64_t n = (int64_t{1} << k) + static_cast<int64_t>(next() % 3) - 1;
      if (n >= 1 && n <= max) return n;
    }
    return 1 + static_cast<int64_t>(next() % static_cast<uint64_t>(max));
  }
  int64_t pick(std::initializer_list<int64_t> values) {
    return *(values.begin() + next() % values.size());
  }
  bool coin() { return next() % 2 == 0; }

 private:
  uint64_t next() {  // splitmix64
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

void fuzzed_shapes(Builder& b) {
  ShapeFuzzer f(kShapeFuzzSeed);
  for (const OpSpec& op : op_contract()) {
    const std::string_view fam = op.family, name = op.name;
    for (int i = 0; i < kShapesPerOp; ++i) {
      std::vector<std::string> variant;
      Shape dims;
      if (fam == "elementwise") {
        dims = {f.length(64), f.length(2048)};
        if (name == "cast") variant.push_back(f.coin() ? "to=bf16" : "to=f16");
        if (name != "fill" && f.coin()) variant.push_back("strided");
      } else if (fam == "reduction" || fam == "softmax") {
        dims = {f.length(64), f.length(4096)};
        if (f.coin()) variant.push_back("axis0");
        if (fam == "reduction" && f.coin()) variant.push_back("strided");
      } else if (fam == "norm") {
        dims = {f.length(64), f.length(4096)};
      } else if (fam == "loss") {
        dims = {f.length(64), f.length(4096)};
      } else if (fam == "gemm") {
        dims = {f.length(128), f.length(128), f.length(1024)};
        if (f.coin()) variant.push_back("ta");
        if (f.coin()) variant.push_back("tb");
      } else if (fam == "attention") {
        dims = {f.pick({1, 2}), f.pick({1, 2, 3}), f.length(256),
                f.pick({16, 32, 64, 80, 96, 128})};
        if (f.coin()) variant.push_back("noncausal");
      } else if (fam == "embedding") {
        dims = {f.length(256), f.length(1024), f.length(256)};
      } else if (fam == "rotary") {
        dims = {f.length(64), f.pick({1, 2, 4}), 2 * f.length(64)};
      } else if (fam == "optimizer") {
        dims = {f.length(65536)};
      } else {
        continue;
      }
      b.add(op.name, DType::kF32, dims, variant, kFirstFuzzedSeed + i);
    }
  }
}

// Every op's factors (op_factors.hpp) crossed: every pair of values at
// quick, every triple from standard on.
void crossed_factors(Builder& b, int strength) {
  for (const OpFactors& op : op_factor_registry())
    for (CaseSpec& spec : crossed_cases(op, strength)) b.add_once(std::move(spec));
}

}  // namespace

std::vector<CaseSpec> crossed_cases(const OpFactors& op, int strength) {
  // Each strength extends the array of the one below: a level keeps the
  // crossed cases of the level below.
  std::vector<FactorRow> rows;
  for (int t = 2; t <= strength; ++t)
    rows = covering_array(value_counts(op), t, allowed_pairs(op), std::move(rows));
  std::vector<CaseSpec> cases;
  for (size_t i = 0; i < rows.size(); ++i)
    cases.push_back(case_of_row(op, rows[i], kFirstCrossedSeed + i));
  return cases;
}

int crossing_strength(Level level) { return level == Level::kQuick ? 2 : 3; }

Level parse_level(std::string_view name) {
  if (name == "quick") return Level::kQuick;
  if (name == "standard") return Level::kStandard;
  if (name == "full") return Level::kFull;
  throw_error(StatusCode::kInvalidArgument,
              fmt::format("unknown level '{}' (quick, standard or full)", name));
}

std::string_view level_name(Level level) {
  switch (level) {
    case Level::kQuick:
      return "quick";
    case Level::kStandard:
      return "standard";
    case Level::kFull:
      return "full";
  }
  return "?";
}

std::vector<CaseSpec> cases_for_level(Level level) {
  Builder b(level);
  training_ops(b);
  elementwise(b);
  reductions(b);
  softmax_family(b);
  norms(b);
  exact_attention_and_norms(b);
  coverage_points(b);
  crossed_factors(b, crossing_strength(level));
  if (b.at_least(Level::kStandard)) fuzzed_shapes(b);
  std::vector<CaseSpec> cases = b.take();
  // Every f32 input of the unary math ops, 2^26 per case (exhaustive_unary.hpp).
  if (level == Level::kFull)
    for (CaseSpec& spec : exhaustive_f32_cases(uint64_t{1} << 26)) cases.push_back(std::move(spec));
  return cases;
}

}  // namespace polychip::precision
