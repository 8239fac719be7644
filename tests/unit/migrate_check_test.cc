// dockershim migrate: the check after a switch (what the new runtime serves compared
// with the snapshot of the old one) and the state file's form of a snapshot.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "shim/migrate/snapshot.h"

namespace shim::migrate {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

Snapshot Node() {
  Snapshot s;
  s.runtime = "cri-dockerd";
  s.pods = {{"pod-web-0123456789", "web-0", "default", true, false, {"10.88.0.5", "fd00::5"}},
            {"pod-proxy-123456789", "kube-proxy-x", "kube-system", true, true, {}},
            {"pod-done-0123456789", "job-1", "default", false, false, {}}};
  s.containers = {{"ctr-app-0123456789", "pod-web-0123456789", "app", "CONTAINER_RUNNING"},
                  {"ctr-side-123456789", "pod-web-0123456789", "sidecar", "CONTAINER_RUNNING"},
                  {"ctr-proxy-12345678", "pod-proxy-123456789", "kube-proxy", "CONTAINER_RUNNING"},
                  {"ctr-job-0123456789", "pod-done-0123456789", "job", "CONTAINER_EXITED"}};
  return s;
}

std::vector<std::string> Problems(const CheckResult& result) {
  std::vector<std::string> out;
  for (const PodCheck& p : result.pods) out.insert(out.end(), p.problems.begin(), p.problems.end());
  return out;
}

TEST(CheckTest, TheSameNodePasses) {
  Snapshot after = Node();
  after.runtime = "dockershim";
  const CheckResult result = Compare(Node(), after);
  EXPECT_TRUE(result.ok());
  ASSERT_EQ(result.pods.size(), 3u);
  EXPECT_EQ(result.pods[0].containers, 2);
  EXPECT_EQ(result.pods[0].kept, 2);
  EXPECT_EQ(result.pods[0].ip_after, "10.88.0.5");
  EXPECT_EQ(result.pods[2].containers, 0);  // only running containers count
  const std::string table = FormatCheck(result);
  EXPECT_THAT(table, HasSubstr("default/web-0"));
  EXPECT_THAT(table, HasSubstr("pod-web-0123"));
  EXPECT_THAT(table, HasSubstr("10.88.0.5"));
  EXPECT_THAT(table, HasSubstr("host network"));
  EXPECT_THAT(table, HasSubstr("2 of 2"));
  EXPECT_THAT(table, Not(HasSubstr("DIFFERS")));
}

TEST(CheckTest, EachDifferenceIsNamed) {
  Snapshot after = Node();
  after.pods[0].ips = {};                                   // web-0 lost its IP
  after.pods[1].ips = {"192.168.1.10"};                     // host network: not compared
  after.pods.erase(after.pods.begin() + 2);                 // job-1 gone
  after.containers.erase(after.containers.begin() + 1);     // the sidecar gone
  after.pods.push_back({"pod-new-0123456789", "new", "default", true, false, {"10.88.0.9"}});
  const CheckResult result = Compare(Node(), after);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(Problems(result), ElementsAre("pod default/web-0: IP 10.88.0.5 is now not reported",
                                            "container sidecar (ctr-side-123) of pod default/web-0 is not listed",
                                            "pod default/job-1 (pod-done-012) is not listed"));
  EXPECT_THAT(result.new_pods, ElementsAre("default/new (pod-new-0123)"));
  const std::string table = FormatCheck(result);
  EXPECT_THAT(table, HasSubstr("DIFFERS"));
  EXPECT_THAT(table, HasSubstr("1 of 2"));
  EXPECT_THAT(table, HasSubstr("differs: pod default/web-0: IP 10.88.0.5 is now not reported"));
  EXPECT_THAT(table, HasSubstr("new since: default/new"));
}

TEST(CheckTest, AnotherIpAPodNoLongerReadyAndAContainerThatEndedByItself) {
  Snapshot after = Node();
  after.pods[0].ips = {"10.88.0.77"};
  after.pods[1].ready = false;
  after.containers[0].state = "CONTAINER_EXITED";
  const CheckResult result = Compare(Node(), after);
  EXPECT_THAT(Problems(result), ElementsAre("pod default/web-0: IP 10.88.0.5 is now 10.88.0.77",
                                            "pod kube-system/kube-proxy-x was ready and is not"));
  // Listed, ended: the switch stops no container, so a note, not a difference.
  ASSERT_EQ(result.pods[0].notes.size(), 1u);
  EXPECT_THAT(result.pods[0].notes[0], HasSubstr("app (ctr-app-0123) of pod default/web-0 is listed, CONTAINER_EXITED"));
  EXPECT_EQ(result.pods[0].kept, 2);
}

TEST(CheckTest, NothingBeforeMeansNothingToMiss) {
  const CheckResult result = Compare(Snapshot(), Node());
  EXPECT_TRUE(result.ok());
  EXPECT_THAT(result.pods, IsEmpty());
  EXPECT_EQ(result.new_pods.size(), 3u);
  EXPECT_THAT(FormatCheck(result), HasSubstr("(no pods before the switch)"));
}

TEST(CheckTest, ASnapshotSurvivesTheStateFile) {
  absl::StatusOr<Snapshot> back = SnapshotFromJson(nlohmann::json::parse(ToJson(Node()).dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->runtime, "cri-dockerd");
  EXPECT_TRUE(Compare(Node(), *back).ok());
  EXPECT_TRUE(Compare(*back, Node()).ok());
  EXPECT_EQ(back->pods[0].ips, Node().pods[0].ips);
  EXPECT_TRUE(back->pods[1].host_network);
  EXPECT_EQ(back->containers[3].state, "CONTAINER_EXITED");
  EXPECT_EQ(SnapshotFromJson(nlohmann::json{{"runtime", "x"}}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shim::migrate
