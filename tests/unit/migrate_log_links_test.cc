// dockershim migrate to-cri-dockerd: the containers' CRI log paths put back as
// cri-dockerd keeps them, symlinks to Docker's json log, on real files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "shim/migrate/log_links.h"
#include "shim/naming.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/temp_dir.h"

namespace shim::migrate {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testutil::TempDir;

class LogLinksTest : public ::testing::Test {
 protected:
  // A running container: dockershim's CRI file at its log path, Docker's json log.
  ContainerLog Container(const std::string& name, const std::string& driver = "json-file") {
    ContainerLog c;
    c.id = name + "-id";
    c.name = name;
    c.cri_path = dir_.Write("pods/ns_pod_uid/" + name + "/0.log", "2026-12-06T00:00:00Z stdout F copied by dockershim\n");
    c.log_driver = driver;
    if (driver == "json-file")
      c.docker_log = dir_.Write("docker/" + c.id + "/" + c.id + "-json.log", "{\"log\":\"hello\\n\"}\n");
    return c;
  }
  TempDir dir_;
};

TEST_F(LogLinksTest, DockershimsCriFileIsReplacedByALinkToDockersJsonLog) {
  const ContainerLog c = Container("app");
  const LinkPlan plan = PlanLink(c);
  ASSERT_EQ(plan.state, LinkState::kToLink) << plan.why;
  ASSERT_TRUE(Relink(c.cri_path, c.docker_log).ok());
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(c.cri_path)));
  EXPECT_EQ(fs::read_symlink(c.cri_path), c.docker_log);
  // What the kubelet reads through the link is what Docker writes from now on.
  std::ofstream(c.docker_log, std::ios::app) << "{\"log\":\"after the switch\\n\"}\n";
  EXPECT_THAT(TempDir::Read(c.cri_path), HasSubstr("after the switch"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(c.cri_path + ".dockershim-migrate")));
  EXPECT_EQ(PlanLink(c).state, LinkState::kLinked);
  // Again: the same link (a rerun after an interruption).
  ASSERT_TRUE(Relink(c.cri_path, c.docker_log).ok());
  EXPECT_EQ(fs::read_symlink(c.cri_path), c.docker_log);
}

TEST_F(LogLinksTest, ALinkLeftHalfMadeOrPointingElsewhereIsRedone) {
  const ContainerLog c = Container("app");
  fs::create_symlink("/nowhere", c.cri_path + ".dockershim-migrate");  // an interrupted run's
  fs::remove(c.cri_path);
  fs::create_symlink(dir_ / "elsewhere.log", c.cri_path);
  EXPECT_EQ(PlanLink(c).state, LinkState::kToLink);
  ASSERT_TRUE(Relink(c.cri_path, c.docker_log).ok());
  EXPECT_EQ(fs::read_symlink(c.cri_path), c.docker_log);
  // No CRI file at all (removed by someone): the link is made.
  fs::remove(c.cri_path);
  EXPECT_EQ(PlanLink(c).state, LinkState::kToLink);
  ASSERT_TRUE(Relink(c.cri_path, c.docker_log).ok());
  EXPECT_EQ(fs::read_symlink(c.cri_path), c.docker_log);
}

TEST_F(LogLinksTest, ADanglingLogPathOrAnotherDriverIsNotLinkable) {
  ContainerLog dangling = Container("dangling");
  fs::remove(dangling.docker_log);
  LinkPlan plan = PlanLink(dangling);
  EXPECT_EQ(plan.state, LinkState::kNotLinkable);
  EXPECT_THAT(plan.why, HasSubstr("is missing"));

  const ContainerLog journald = Container("journald", "journald");
  plan = PlanLink(journald);
  EXPECT_EQ(plan.state, LinkState::kNotLinkable);
  EXPECT_THAT(plan.why, HasSubstr("log driver journald, not json-file"));
  // Nothing touched: dockershim's copy stays, with what it holds.
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(journald.cri_path)));
  EXPECT_THAT(TempDir::Read(dangling.cri_path), HasSubstr("copied by dockershim"));
}

TEST_F(LogLinksTest, RunningCriContainersWithALogPathFromDocker) {
  testing_fakes::FakeDockerClient docker;
  docker.AddImage({"busybox:latest"});
  const common::Context ctx = common::Context::WithTimeout(absl::Seconds(5));
  auto create = [&](const std::string& name, const std::string& type, const std::string& log_path,
                    const std::string& driver) {
    nlohmann::json labels = {{kContainerTypeLabel, type}};
    if (!log_path.empty()) labels[kContainerLogPathLabel] = log_path;
    nlohmann::json body = {{"Image", "busybox:latest"},
                           {"Labels", labels},
                           {"HostConfig", {{"LogConfig", {{"Type", driver}, {"Config", nlohmann::json::object()}}}}}};
    absl::StatusOr<std::string> id = docker.CreateContainer(ctx, name, body);
    EXPECT_TRUE(id.ok()) << id.status();
    return *id;
  };
  const std::string app = create("k8s_app_pod_ns_uid_0", "container", "/var/log/pods/ns_pod_uid/app/0.log", "json-file");
  const std::string local = create("k8s_local_pod_ns_uid_0", "container", "/var/log/pods/ns_pod_uid/local/0.log", "local");
  create("k8s_stopped_pod_ns_uid_0", "container", "/var/log/pods/ns_pod_uid/stopped/0.log", "json-file");
  const std::string nolog = create("k8s_nolog_pod_ns_uid_0", "container", "", "json-file");
  const std::string pause = create("k8s_POD_pod_ns_uid_0", "podsandbox", "", "json-file");
  for (const std::string& id : {app, local, nolog, pause}) ASSERT_TRUE(docker.StartContainer(ctx, id).ok());
  docker.EditContainer(local, [](dockerclient::ContainerInspect& c) { c.log_path = ""; });  // as Docker for "local"

  absl::StatusOr<std::vector<ContainerLog>> logs = RunningContainerLogs(docker, ctx);
  ASSERT_TRUE(logs.ok()) << logs.status();
  ASSERT_EQ(logs->size(), 2u);
  const ContainerLog& a = (*logs)[0].id == app ? (*logs)[0] : (*logs)[1];
  const ContainerLog& l = (*logs)[0].id == app ? (*logs)[1] : (*logs)[0];
  EXPECT_EQ(a.name, "k8s_app_pod_ns_uid_0");
  EXPECT_EQ(a.cri_path, "/var/log/pods/ns_pod_uid/app/0.log");
  EXPECT_EQ(a.log_driver, "json-file");
  EXPECT_EQ(a.docker_log, "/var/lib/docker/containers/" + app + "/" + app + "-json.log");
  EXPECT_EQ(l.log_driver, "local");
  EXPECT_EQ(l.docker_log, "");
  EXPECT_EQ(PlanLink(l).state, LinkState::kNotLinkable);
}

}  // namespace
}  // namespace shim::migrate
