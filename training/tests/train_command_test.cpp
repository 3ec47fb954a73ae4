// `polychip train` end to end (the real binary): a progress line per step,
// the run directory, --resume continuing to the same curve as one run, and
// refusals of a bad device or option with exit code 2.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_test_fixture.hpp"

namespace {

namespace fs = std::filesystem;

using polychip::training::testing::slurp;

class TrainCommand : public polychip::training::testing::CliTest {
 protected:
  Result train(const std::string& args) { return run("train " + args); }
  nlohmann::json history(const std::string& run) {
    return nlohmann::json::parse(slurp(dir_ / run / "training_state.json"))["history"];
  }
};

TEST_F(TrainCommand, PrintsAProgressLinePerStepAndWritesTheRunDirectory) {
  const Result r = train("--adapter cpu --preset tiny --steps 4 --out " + (dir_ / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex line(R"(step +(\d+)/4  loss \d+\.\d{6}  grad_norm \d+\.\d{4}  lr .* ms)");
  int steps = 0;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);)
    if (std::smatch m; std::regex_match(l, m, line)) {
      EXPECT_EQ(std::stoi(m[1]), ++steps) << l;
    }
  EXPECT_EQ(steps, 4) << r.out;
  for (const char* f : {"model.safetensors", "config.json", "optimizer.safetensors",
                        "training_state.json", "metrics.npy"})
    EXPECT_TRUE(fs::exists(dir_ / "run" / f)) << f;
  EXPECT_EQ(history("run").size(), 4u);
}

TEST_F(TrainCommand, ResumeContinuesToTheSameCurveAsOneRun) {
  ASSERT_EQ(train("--preset tiny --steps 4 --out " + (dir_ / "straight").string()).exit_code, 0);
  ASSERT_EQ(train("--preset tiny --steps 2 --out " + (dir_ / "split").string()).exit_code, 0);
  // Without --resume the run there is refused, not written over with step 1
  // (a forgotten --resume lost the checkpoint before).
  const std::string checkpoint = slurp(dir_ / "split" / "model.safetensors");
  const Result again = train("--preset tiny --steps 4 --out " + (dir_ / "split").string());
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_NE(again.err.find("' holds a run already: continue it with --resume"), std::string::npos)
      << again.err;
  EXPECT_EQ(slurp(dir_ / "split" / "model.safetensors"), checkpoint);
  const Result r = train("--preset tiny --steps 4 --resume --out " + (dir_ / "split").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step     3/4"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("step     1/4"), std::string::npos) << r.out;
  EXPECT_EQ(history("straight"), history("split"));
  EXPECT_EQ(slurp(dir_ / "straight" / "model.safetensors"),
            slurp(dir_ / "split" / "model.safetensors"));
}

// A Hugging Face model folder holds a model.safetensors and a config.json,
// the names a run writes: it is refused, not written over (it was).
TEST_F(TrainCommand, AFolderHoldingFilesOfARunsNamesIsNotWrittenOver) {
  fs::create_directories(dir_ / "hf_model");
  std::ofstream(dir_ / "hf_model" / "model.safetensors") << "weights";
  std::ofstream(dir_ / "hf_model" / "config.json") << "{}";
  std::ofstream(dir_ / "hf_model" / "README.md") << "a model";
  const std::string out = (dir_ / "hf_model").string();
  Result r = train("--preset tiny --steps 2 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out '" + out +
                       "' holds model.safetensors, config.json, not written by a polychip run "
                       "(it has no training_state.json): the run would write over them"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(dir_ / "hf_model" / "model.safetensors"), "weights");
  EXPECT_EQ(slurp(dir_ / "hf_model" / "config.json"), "{}");
  // Other files are no obstacle.
  fs::create_directories(dir_ / "notes");
  std::ofstream(dir_ / "notes" / "README.md") << "notes";
  r = train("--preset tiny --steps 2 --out " + (dir_ / "notes").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(dir_ / "notes" / "README.md"), "notes");
}

// --steps is the total to reach: a run resumed at it trains and writes
// nothing and says so; one resumed past it is refused (it said "wrote" and
// rewrote the same checkpoint, as if it had trained).
TEST_F(TrainCommand, AResumeAtOrPastItsStepsSaysSoAndWritesNothing) {
  const std::string out = (dir_ / "run").string();
  ASSERT_EQ(train("--preset tiny --steps 3 --out " + out).exit_code, 0);
  const auto written = fs::last_write_time(dir_ / "run" / "training_state.json");
  Result r = train("--preset tiny --steps 3 --resume --out " + out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(out + " holds step 3 of 3 already: nothing to train, nothing written"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("wrote"), std::string::npos) << r.out;
  r = train("--preset tiny --steps 2 --resume --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--resume: " + out +
                       " holds step 3, past --steps 2: give the total number of steps to "
                       "reach, more than 3"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(fs::last_write_time(dir_ / "run" / "training_state.json"), written);
  EXPECT_EQ(history("run").size(), 3u);
}

// A resume without the run's --preset (the default's is another) names the
// preset that wrote the checkpoint and the option to pass; it said only
// "written with batch_size = 2, this run has 8". Passing it resumes.
TEST_F(TrainCommand, AResumeWithAnotherPresetNamesThePresetToPass) {
  const std::string out = (dir_ / "run").string();
  ASSERT_EQ(train("--preset tiny --steps 1 --out " + out).exit_code, 0);
  Result r = train("--steps 2 --resume --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("polychip train: --resume: training checkpoint: " + out +
                       " was written with preset tiny (batch_size = 2); this run uses preset "
                       "default (batch_size = 8): pass --preset tiny\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("step "), std::string::npos) << r.out;
  r = train("--preset tiny --steps 2 --resume --out " + out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(history("run").size(), 2u);
}

// A learning rate that blows the weights up: the step whose loss is NaN
// ends the run with exit code 3, naming the step and the learning rate; the
// run directory keeps the last checkpoint (step 1), not the NaN weights.
// (It exited 0 after training on NaN to the last step.)
TEST_F(TrainCommand, ADivergedRunStopsAtTheFirstNonFiniteLoss) {
  const fs::path run = dir_ / "diverged";
  const Result r =
      train("--preset tiny --steps 5 --lr 1e30 --checkpoint-every 1 --out " + run.string());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("polychip train: step 2: the loss is nan and the gradient norm nan: "
                       "training diverged (learning rate 1e+30); stopped, the run directory "
                       "holds step 1"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("step     3/5"), std::string::npos) << r.out;
  EXPECT_EQ(history("diverged").size(), 1u);
  // Without checkpoints along the way nothing is written. At 1e4 the loss
  // is still finite (about 6.7e8) where the gradient norm is not.
  const Result fresh = train("--preset tiny --steps 5 --lr 1e4 --out " + (dir_ / "fresh").string());
  EXPECT_EQ(fresh.exit_code, 3) << fresh.err;
  EXPECT_EQ(fresh.err.find("the loss is nan"), std::string::npos) << fresh.err;
  EXPECT_NE(fresh.err.find("and the gradient norm nan: training diverged (learning rate 10000); "
                           "stopped, nothing was written to the run directory"),
            std::string::npos)
      << fresh.err;
  EXPECT_FALSE(fs::exists(dir_ / "fresh" / "training_state.json"));
}

TEST_F(TrainCommand, BadDeviceOrOptionIsAUsageError) {
  Result r = train("--adapter no_such_chip --preset tiny --steps 1 --out " + (dir_ / "x").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no device 'no_such_chip'"), std::string::npos) << r.err;
  r = train("--preset huge --steps 1 --out " + (dir_ / "x").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("presets: tiny, default, pool, gpt2-small"), std::string::npos) << r.err;
  r = train("--preset tiny --steps 0 --out " + (dir_ / "x").string());
  EXPECT_EQ(r.exit_code, 2);
  r = train("--preset tiny --steps 1");  // --out missing
  EXPECT_EQ(r.exit_code, 2);
  r = train("--preset tiny --steps 2 --resume --out " + (dir_ / "never_written").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("never_written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "never_written"));
}

// Each refused before the first step (exit 2, the message naming the
// option), none after a run nor with a value silently changed: an --out
// that cannot be made used to abort() at the end of the run, a
// --record-reference into no folder or onto a folder to fail after it, and 64-bit numbers
// past their range were saturated (steps) or wrapped (seed -1).
TEST_F(TrainCommand, OptionsThatCannotWorkAreRefusedBeforeTraining) {
  const std::string out = " --out " + (dir_ / "r").string();
  const struct {
    std::string args, message;
  } refused[] = {
      {"--out /proc/polychip_no_such/run", "--out '/proc/polychip_no_such/run': cannot create"},
      {"--record-reference /proc/polychip_no_such/ref.json" + out,
       "no folder '/proc/polychip_no_such'"},
      // (the run's own folder: written over at the end of the run before)
      {"--record-reference " + (dir_ / "r").string() + out, "' is a folder: name the trace's file"},
      {"--lr inf" + out, "must be finite and >= 0"},
      {"--lr nan" + out, "must be finite and >= 0"},
      {"--checkpoint-every -3" + out, "--checkpoint-every must be >= 0"},
      {"--dp-weights maybe --np 2" + out, "--dp-weights must be shard, check or sync, got 'maybe'"},
      {"--steps 99999999999999999999" + out, "'99999999999999999999' is not a whole number"},
      {"--seed -1" + out, "'-1' is not a whole number in [0, 18446744073709551615]"},
      {"--seed 18446744073709551616" + out, "'18446744073709551616' is not a whole number"},
      {"--adapter cpu,,cpu --np 2" + out, "--adapter: an empty entry"},
  };
  for (const auto& c : refused) {
    const Result r = train("--preset tiny --steps 1 " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out.find("step "), std::string::npos) << c.args << " trained:\n" << r.out;
  }
}

}  // namespace
