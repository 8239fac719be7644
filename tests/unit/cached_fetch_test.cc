// A value asked of Docker once for many callers (shim/cached_fetch.h), as a thread that
// must not wait (common/no_wait.h) sees it: a kept answer is given, a wait for another
// caller's first fetch is refused.
#include "shim/cached_fetch.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/no_wait.h"

namespace shim {
namespace {

TEST(CachedFetchTest, AThreadThatMustNotWaitGetsTheKeptAnswerOrIsRefusedAtOnce) {
  CachedFetch<std::string> version("GET /version", absl::Minutes(1), nullptr);
  absl::Notification fetching, answer;
  std::thread first([&] {
    auto got = version.Get(common::Context::WithTimeout(absl::Seconds(10)), [&](const common::Context&) {
      fetching.Notify();
      answer.WaitForNotification();
      return absl::StatusOr<std::string>("29.7.2");
    });
    EXPECT_TRUE(got.ok());
  });
  fetching.WaitForNotification();
  {
    common::NoWaitScope no_wait;
    const absl::Time start = absl::Now();
    auto refused = version.Get(common::Context::WithTimeout(absl::Seconds(5)),
                               [](const common::Context&) -> absl::StatusOr<std::string> {
                                 ADD_FAILURE() << "a second fetch while the first runs";
                                 return "";
                               });
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << "it waited for the first fetch";
    EXPECT_TRUE(no_wait.wanted_to_wait());
  }
  answer.Notify();
  first.join();

  common::NoWaitScope no_wait;
  auto kept = version.Get(common::Context::WithTimeout(absl::Seconds(5)),
                          [](const common::Context&) -> absl::StatusOr<std::string> {
                            ADD_FAILURE() << "fetched again within its minute";
                            return "";
                          });
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(**kept, "29.7.2");
  EXPECT_FALSE(no_wait.wanted_to_wait());
}

}  // namespace
}  // namespace shim
