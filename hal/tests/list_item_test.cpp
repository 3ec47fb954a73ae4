#include "polychip/list_item.hpp"

#include <gtest/gtest.h>

namespace polychip {
namespace {

TEST(ListItem, BlanksAroundAnItemAreNotPartOfIt) {
  EXPECT_EQ(trim_blanks("sim:0"), "sim:0");
  EXPECT_EQ(trim_blanks(" sim:0"), "sim:0");
  EXPECT_EQ(trim_blanks("cpu \t"), "cpu");
  EXPECT_EQ(trim_blanks("\t sim.faithful  "), "sim.faithful");
  EXPECT_EQ(trim_blanks("a b"), "a b");  // blanks inside stay
  EXPECT_EQ(trim_blanks("x"), "x");
  EXPECT_EQ(trim_blanks(""), "");
  EXPECT_EQ(trim_blanks(" \t "), "");
  EXPECT_EQ(trim_blanks("cpu\n"), "cpu\n");  // only spaces and tabs are blanks
}

}  // namespace
}  // namespace polychip
