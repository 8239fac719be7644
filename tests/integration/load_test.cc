// The load bench (tests/bench/load_bench.cc) reduced for CI: 10 pods with one container
// each, created and removed by 4 concurrent gRPC clients, 2 rounds, on the real
// dockershim binary with the real CNI plugins. Asserts that every call succeeds and
// that nothing is left behind: no container of the test's pod namespace in Docker, no
// IP reservation, checkpoint or CNI cache file, and no more fds after the second round
// than after the first (nor threads, but gRPC's on-demand ones). Timings are printed by the bench, not asserted.
//
// The shim runs in a network namespace of its own (its CNI bridge goes with it).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"
#include "tests/support/footprint.h"
#include "tests/support/load_driver.h"

namespace {

namespace fs = std::filesystem;

constexpr char kNamespace[] = "dsload-test";
constexpr int kPods = 10, kClients = 4, kRounds = 2;

std::string Describe(const testsupport::Figures& figures) {
  std::string out;
  for (const auto& [name, rpc] : figures.rpcs)
    for (const auto& [code, n] : rpc.failures)
      absl::StrAppend(&out, name, ": ", n, " x code ", static_cast<int>(code), " (first: ", rpc.first_error, "); ");
  return out;
}

class LoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "dsload-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    RemoveOurContainers();  // a killed earlier run
  }
  void TearDown() override {
    shim_.reset();
    RemoveOurContainers();
    fs::remove_all(dir_);
  }
  static void RemoveOurContainers() {
    testenv::Sh(absl::StrCat("docker ps -aq --filter label=io.kubernetes.pod.namespace=", kNamespace,
                             " | xargs -r docker rm -f"));
  }

  std::string dir_;
  std::unique_ptr<testsupport::ShimProcess> shim_;
};

TEST_F(LoadTest, ConcurrentPodsCreatedAndRemovedLeaveNothingBehind) {
  auto run = testsupport::PrepareLoadRun(DOCKERSHIM_BINARY, dir_, kNamespace, "dsload1", kClients);
  ASSERT_TRUE(run.ok()) << run.status();
  auto shim = testsupport::ShimProcess::Start(run->launch);
  ASSERT_TRUE(shim.ok()) << shim.status();
  shim_ = std::move(*shim);
  testsupport::LoadDriver driver(run->options);

  std::vector<testsupport::Footprint> after;
  for (int round = 1; round <= kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    testsupport::Figures figures;
    std::vector<testsupport::Pod> pods = driver.CreatePods(absl::StrCat("r", round), kPods, &figures);
    int running = 0;
    for (const auto& pod : pods) running += !pod.container_id.empty();
    EXPECT_EQ(running, kPods);
    driver.RemovePods(pods, &figures);
    EXPECT_EQ(figures.Failures(), 0) << Describe(figures);
    EXPECT_EQ(figures.rpcs["RemovePodSandbox"].ms.size(), static_cast<size_t>(kPods));

    auto left = testsupport::CountLeftovers(run->places);
    ASSERT_TRUE(left.ok()) << left.status();
    EXPECT_EQ(left->containers, 0);
    EXPECT_EQ(left->ip_allocations, 0);
    EXPECT_EQ(left->checkpoints, 0);
    EXPECT_EQ(left->cni_cache_files, 0);
    EXPECT_EQ(left->creation_markers, 0);

    absl::SleepFor(absl::Seconds(2));  // gRPC's pool threads end a moment after their calls
    auto footprint = testsupport::ReadFootprint(shim_->pid());
    ASSERT_TRUE(footprint.ok()) << footprint.status();
    after.push_back(*footprint);
  }
  EXPECT_LE(after.back().fds, after.front().fds);
  EXPECT_LE(after.back().threads, after.front().threads + testsupport::kThreadSlack);
  auto code = shim_->Stop();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << shim_->Stderr();
}

}  // namespace
