// view::Derived: a value made once per version of the container view, made again
// when the view moves on, when it ages past its bound, or when the last one was
// incomplete; a failure is returned and keeps nothing.
#include "shim/view/derived.h"

#include <gtest/gtest.h>

#include <string>

namespace shim::view {
namespace {

class DerivedTest : public ::testing::Test {
 protected:
  // Gets the value at `version`, `now`; counts the makes.
  std::string Get(uint64_t version, absl::Time now, bool complete = true) {
    auto got = derived_.Get(version, now, absl::Minutes(1), [&]() -> absl::StatusOr<Made<std::string>> {
      ++makes_;
      return Made<std::string>{"made " + std::to_string(makes_), complete};
    });
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? **got : "";
  }

  Derived<std::string> derived_;
  int makes_ = 0;
  const absl::Time t0_ = absl::FromUnixSeconds(1000);
};

TEST_F(DerivedTest, MadeOncePerVersion) {
  EXPECT_EQ(Get(7, t0_), "made 1");
  EXPECT_EQ(Get(7, t0_ + absl::Seconds(59)), "made 1");
  EXPECT_EQ(Get(8, t0_ + absl::Seconds(59)), "made 2");
  EXPECT_EQ(makes_, 2);
}

TEST_F(DerivedTest, MadeAgainOnceOlderThanItsBound) {
  EXPECT_EQ(Get(7, t0_), "made 1");
  EXPECT_EQ(Get(7, t0_ + absl::Minutes(1)), "made 2");
  EXPECT_EQ(Get(7, t0_ + absl::Minutes(1)), "made 2");
}

TEST_F(DerivedTest, AnIncompleteValueIsServedOnceNotKept) {
  EXPECT_EQ(Get(7, t0_, /*complete=*/false), "made 1");
  EXPECT_EQ(Get(7, t0_), "made 2");
  EXPECT_EQ(Get(7, t0_), "made 2");
}

TEST_F(DerivedTest, AFailureIsReturnedAndTheKeptValueStays) {
  EXPECT_EQ(Get(7, t0_), "made 1");
  auto failed = derived_.Get(8, t0_, absl::Minutes(1), [] () -> absl::StatusOr<Made<std::string>> {
    return absl::UnavailableError("docker is restarting");
  });
  EXPECT_TRUE(absl::IsUnavailable(failed.status()));
  EXPECT_EQ(Get(7, t0_), "made 1");
}

TEST_F(DerivedTest, AValueMadeAtAnOlderVersionDoesNotReplaceANewerOne) {
  EXPECT_EQ(Get(9, t0_), "made 1");
  EXPECT_EQ(Get(8, t0_), "made 2");  // a caller that read the version before the view moved on
  EXPECT_EQ(Get(9, t0_), "made 1");
}

TEST_F(DerivedTest, WhileTheViewIsNotLiveEachCallerMakesItsOwnAndNothingIsKept) {
  EXPECT_EQ(Get(7, t0_), "made 1");
  auto make = [&](const char* what) {
    return [&, what]() -> absl::StatusOr<Made<std::string>> {
      ++makes_;
      return Made<std::string>{what, true};
    };
  };
  for (int i = 0; i < 2; ++i) {
    auto got = derived_.Get(std::nullopt, t0_, absl::Minutes(1), make("from the view"), make("from Docker"));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(**got, "from Docker");
  }
  auto live = derived_.Get(std::optional<uint64_t>(7), t0_, absl::Minutes(1), make("from the view"), make("from Docker"));
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(**live, "made 1");
  EXPECT_EQ(makes_, 3);
}

}  // namespace
}  // namespace shim::view
