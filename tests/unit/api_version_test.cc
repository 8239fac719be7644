#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dockerclient/docker_client_impl.h"

namespace dockerclient {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* server;
  const char* chosen;  // nullptr: refused with FAILED_PRECONDITION
};

class NegotiateApiVersionTest : public ::testing::TestWithParam<Case> {};

TEST_P(NegotiateApiVersionTest, Chooses) {
  const absl::StatusOr<std::string> version = NegotiateApiVersion(GetParam().server);
  if (GetParam().chosen == nullptr) {
    ASSERT_FALSE(version.ok()) << *version;
    EXPECT_EQ(version.status().code(), absl::StatusCode::kFailedPrecondition);
  } else {
    ASSERT_TRUE(version.ok()) << version.status();
    EXPECT_EQ(*version, GetParam().chosen);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, NegotiateApiVersionTest,
                         ::testing::Values(Case{"1.41", "1.41"},  // Docker 20.10
                                           Case{"1.43", "1.43"},  // Docker 24
                                           Case{"1.45", "1.45"},  // Docker 26.1
                                           Case{"1.47", "1.47"},  // Docker 27.4
                                           Case{"1.48", "1.48"},  // Docker 28.0
                                           Case{"1.51", "1.51"},  // Docker 28.5
                                           Case{"1.52", "1.52"},  // Docker 29.0
                                           Case{"1.55", "1.55"},  // Docker 29.7, the newest we speak
                                           Case{"1.56", "1.55"},  // newer servers accept older clients
                                           Case{"2.0", "1.55"},
                                           Case{"1.100", "1.55"},  // compared as numbers, not text
                                           Case{"1.40", nullptr},  // Docker 19.03
                                           Case{"1.9", nullptr}, Case{"0.99", nullptr}, Case{"", nullptr},
                                           Case{"1", nullptr}, Case{"v1.41", nullptr}, Case{"1.x", nullptr},
                                           Case{"1.41.0", nullptr}));

TEST(NegotiateApiVersionTest, TooOldExplainsTheMinimum) {
  const absl::Status status = NegotiateApiVersion("1.40").status();
  EXPECT_THAT(status.message(), HasSubstr("1.40"));
  EXPECT_THAT(status.message(), HasSubstr("1.41"));
  EXPECT_THAT(status.message(), HasSubstr("Docker 20.10"));
}

}  // namespace
}  // namespace dockerclient
