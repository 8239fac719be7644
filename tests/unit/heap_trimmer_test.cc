// HeapTrimmer: one trim per burst of ended calls, after its delay; none without calls;
// bursts closer than the interval wait for it; Stop ends the wait at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/time/clock.h"
#include "shim/memory/memory.h"

namespace {

using shim::memory::HeapTrimmer;

// Waits up to `timeout` for `n` to reach `want`.
bool WaitFor(const std::atomic<int>& n, int want, absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  while (n.load() < want && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
  return n.load() >= want;
}

TEST(HeapTrimmerTest, OneTrimPerBurstAfterTheDelay) {
  std::atomic<int> trims{0};
  HeapTrimmer trimmer(absl::Milliseconds(100), absl::Milliseconds(50), [&] { ++trims; });
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(trims.load(), 0) << "no call ended, nothing to trim";
  const absl::Time start = absl::Now();
  for (int i = 0; i < 1000; ++i) trimmer.NoteCallEnded();
  ASSERT_TRUE(WaitFor(trims, 1, absl::Seconds(5)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(100));
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(trims.load(), 1) << "the calls of one burst share a trim";
  trimmer.NoteCallEnded();
  ASSERT_TRUE(WaitFor(trims, 2, absl::Seconds(5))) << "a later burst gets its own";
}

TEST(HeapTrimmerTest, ABurstDuringTheIntervalIsTrimmedAfterIt) {
  std::atomic<int> trims{0};
  HeapTrimmer trimmer(absl::Milliseconds(20), absl::Milliseconds(400), [&] { ++trims; });
  trimmer.NoteCallEnded();
  ASSERT_TRUE(WaitFor(trims, 1, absl::Seconds(5)));
  const absl::Time first = absl::Now();
  trimmer.NoteCallEnded();
  ASSERT_TRUE(WaitFor(trims, 2, absl::Seconds(5)));
  EXPECT_GE(absl::Now() - first, absl::Milliseconds(350));
}

TEST(HeapTrimmerTest, StopDoesNotWaitForTheDelay) {
  std::atomic<int> trims{0};
  HeapTrimmer trimmer(absl::Seconds(30), absl::Seconds(30), [&] { ++trims; });
  trimmer.NoteCallEnded();
  const absl::Time start = absl::Now();
  trimmer.Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(trims.load(), 0);
}

}  // namespace
