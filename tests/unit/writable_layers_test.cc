#include "shim/stats/writable_layers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/unit/stats_fake_tree.h"

namespace shim::stats {
namespace {

using testutil::FakeTree;

// The measurements of `id` seen by asking every millisecond for `span`.
std::set<absl::Time> MeasurementsSeen(WritableLayerCollector& layers, const std::string& id, const std::string& dir,
                                      absl::Duration span) {
  std::set<absl::Time> seen;
  const absl::Time end = absl::Now() + span;
  while (absl::Now() < end) {
    if (std::optional<LayerUsage> usage = layers.Get(id, dir)) seen.insert(usage->measured_at);
    absl::SleepFor(absl::Milliseconds(1));
  }
  return seen;
}

// The first measurement of `id` that shows at least `inodes` inodes; unset after 10 s.
std::optional<LayerUsage> AwaitInodes(WritableLayerCollector& layers, const std::string& id, const std::string& dir,
                                      uint64_t inodes) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    std::optional<LayerUsage> usage = layers.Get(id, dir);
    if (usage && usage->usage.inodes >= inodes) return usage;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return std::nullopt;
}

TEST(WritableLayerCollectorTest, ALayerThatStaysTheSameIsMeasuredLessAndLessOftenYetChangesAreSeen) {
  FakeTree tree;
  tree.Write("layer/etc/file", "x");
  const std::string dir = tree.Path("layer");
  WritableLayerCollector layers({.interval = absl::Milliseconds(10),
                                 .forget_after = absl::Minutes(1),
                                 .max_interval = absl::Milliseconds(160)});
  ASSERT_TRUE(AwaitInodes(layers, "a", dir, 3).has_value());
  // Every 10 ms, 20, 40, 80, 160, 160...: about 9 in 600 ms, where a fixed interval
  // would give 60. Fewer on a slow machine, never more.
  EXPECT_LE(MeasurementsSeen(layers, "a", dir, absl::Milliseconds(600)).size(), 14u);

  // Grown to its longest: a change is seen within it.
  tree.Write("layer/etc/other", "y");
  const absl::Time written = absl::Now();
  std::optional<LayerUsage> changed = AwaitInodes(layers, "a", dir, 4);
  ASSERT_TRUE(changed.has_value()) << "the change was never measured";
  EXPECT_GE(changed->measured_at, written);
}

TEST(WritableLayerCollectorTest, ALayerThatKeepsChangingIsMeasuredEveryInterval) {
  FakeTree tree;
  tree.Write("layer/0", "");
  const std::string dir = tree.Path("layer");
  WritableLayerCollector layers({.interval = absl::Milliseconds(10),
                                 .forget_after = absl::Minutes(1),
                                 .max_interval = absl::Seconds(10)});
  ASSERT_TRUE(AwaitInodes(layers, "a", dir, 2).has_value());
  std::atomic<bool> writing = true;
  std::thread writer([&] {
    for (int i = 1; writing; ++i) {
      tree.Write(absl::StrCat("layer/", i), "");
      absl::SleepFor(absl::Milliseconds(2));
    }
  });
  // Every 10 ms: about 50 in 500 ms; grown while the size stays, it would be 6.
  const size_t seen = MeasurementsSeen(layers, "a", dir, absl::Milliseconds(500)).size();
  writing = false;
  writer.join();
  EXPECT_GE(seen, 12u);
}

}  // namespace
}  // namespace shim::stats
