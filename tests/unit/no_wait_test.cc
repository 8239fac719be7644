// What may wait on the calling thread (common/no_wait.h): a NoWaitScope refuses waits on
// its own thread only, remembers each refusal, and ends with its block.
#include "common/no_wait.h"

#include <gtest/gtest.h>

#include <thread>

namespace common {
namespace {

TEST(NoWaitTest, OutsideAScopeEverythingMayWait) {
  EXPECT_TRUE(MayWait());
  EXPECT_TRUE(MayWait());
}

TEST(NoWaitTest, InsideAScopeAWaitIsRefusedAndNoted) {
  NoWaitScope scope;
  EXPECT_FALSE(scope.wanted_to_wait());
  EXPECT_FALSE(MayWait());
  EXPECT_TRUE(scope.wanted_to_wait());
}

TEST(NoWaitTest, AScopeThatNothingAskedStaysClean) {
  NoWaitScope scope;
  EXPECT_FALSE(scope.wanted_to_wait());
}

TEST(NoWaitTest, TheScopeEndsWithItsBlock) {
  { NoWaitScope scope; }
  EXPECT_TRUE(MayWait());
}

TEST(NoWaitTest, OtherThreadsMayStillWait) {
  NoWaitScope scope;
  bool other = false;
  std::thread([&] { other = MayWait(); }).join();
  EXPECT_TRUE(other) << "a worker of the same process waits as it likes";
  EXPECT_FALSE(scope.wanted_to_wait());
}

TEST(NoWaitTest, AnInnerScopeHandsBackToTheOuterOne) {
  NoWaitScope outer;
  {
    NoWaitScope inner;
    EXPECT_FALSE(MayWait());
    EXPECT_TRUE(inner.wanted_to_wait());
  }
  EXPECT_FALSE(outer.wanted_to_wait());
  EXPECT_FALSE(MayWait());
  EXPECT_TRUE(outer.wanted_to_wait());
}

TEST(NoWaitTest, TheRefusalNamesWhatWouldHaveWaited) {
  absl::Status refused = WouldWait("GET /info");
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(refused.message().find("GET /info"), std::string::npos);
}

}  // namespace
}  // namespace common
