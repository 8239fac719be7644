// dockershim migrate: the steps of a switch in each direction against a fake node —
// systemd's units as state (enabled, active, the path each socket listens on as loaded
// at the last daemon-reload), the files real under a temp dir, CRI answers from whichever
// socket unit listens on the path asked. A dry run changes nothing; a run killed at any
// action (before or after it took effect) is finished by the next; refusals change nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/files.h"
#include "shim/checkpoint_store.h"
#include "shim/migrate/installation.h"
#include "shim/migrate/migration.h"
#include "tests/unit/cri_dockerd_units.h"
#include "tests/unit/temp_dir.h"

namespace shim::migrate {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testutil::TempDir;

constexpr char kCriSocketPath[] = "/run/cri-dockerd.sock";
constexpr char kOurSocketPath[] = "/run/dockershim.sock";

class FakeNode : public System {
 public:
  struct FakeUnit {
    bool enabled = false, active = false;
    absl::Time since = absl::InfinitePast();
    std::string listening;  // sockets: the path bound while active
  };

  explicit FakeNode(Paths paths) : paths_(std::move(paths)) { LoadSockets(); }

  std::map<std::string, FakeUnit> units;
  Snapshot pods;                        // what either runtime lists
  bool dockershim_reports_ips = true;   // false: dockershim lists the pods without their IPs
  std::vector<ContainerLog> logs;       // Docker's running containers
  absl::Status config_error;            // what dockershim says of any configuration
  int unanswered = 0;                   // so many CRI calls find nobody (a runtime killed, restarting)
  std::map<std::string, std::string> systemctl_errors;  // by verb: systemctl fails with this text
  std::vector<std::string> actions;     // what changed the node, in order
  // The action of this index is killed: not done, or done (`fail_after`) and then killed.
  int fail_at = -1;
  bool fail_after = false;

  absl::StatusOr<UnitStatus> Unit(const std::string& unit) override {
    const auto it = units.find(unit);
    UnitStatus s;
    if (it == units.end()) return s;
    s.enabled = it->second.enabled;
    s.active = it->second.active;
    s.active_since = it->second.since;
    s.need_reload = reload_pending_;
    return s;
  }

  absl::Status Systemctl(const std::string& verb, const std::vector<std::string>& names) override {
    return Act(absl::StrCat("systemctl ", verb, names.empty() ? "" : " ", absl::StrJoin(names, " ")), [&] {
      if (const auto e = systemctl_errors.find(verb); e != systemctl_errors.end())
        return absl::FailedPreconditionError(e->second);
      if (verb == "daemon-reload") {
        reload_pending_ = false;
        LoadSockets();
      }
      for (const std::string& name : names) {
        FakeUnit& u = units[name];
        if (verb == "enable") u.enabled = true;
        if (verb == "disable") u.enabled = false;
        if (verb == "stop") {
          u.active = false;
          u.listening.clear();
        }
        if (verb == "start" && !u.active) {
          u.active = true;
          u.since = Now();
          if (absl::EndsWith(name, ".socket")) u.listening = loaded_[name];
        }
      }
      return absl::OkStatus();
    });
  }

  absl::Status WriteFile(const std::string& path, const std::string& content) override {
    return Act("write " + Short(path), [&] {
      Touched(path);
      return common::WriteFileAtomically(path, content, 0644);
    });
  }
  absl::Status WriteCriDockerdFile(const std::string& path, const std::string& content) override {
    return Act("write " + Short(path), [&] {
      Touched(path);
      return common::WriteFileAtomically(path, content, 0600, /*hidden_temp=*/true);
    });
  }
  absl::Status LinkFile(const std::string& existing, const std::string& link) override {
    return Act("link " + Short(existing), [&] {
      std::error_code ec;
      fs::create_hard_link(existing, link, ec);
      return ec ? absl::InternalError(ec.message()) : absl::OkStatus();
    });
  }
  absl::Status RemoveFile(const std::string& path) override {
    return Act("remove " + Short(path), [&] {
      Touched(path);
      std::error_code ec;
      fs::remove(path, ec);
      return absl::OkStatus();
    });
  }
  absl::Status Relink(const std::string& path, const std::string& target) override {
    return Act("relink " + fs::path(path).filename().string(), [&] { return migrate::Relink(path, target); });
  }
  absl::Status CheckConfig(const std::string& content) override {
    checked_configs.push_back(content);
    return config_error;
  }
  std::vector<std::string> checked_configs;

  absl::StatusOr<Snapshot> TakeSnapshot(const std::string& socket_path, absl::Duration) override {
    if (unanswered > 0) {
      --unanswered;
      return absl::UnavailableError(absl::StrCat("connect ", socket_path, ": the runtime was killed"));
    }
    for (const auto& [name, u] : units) {
      if (!u.active || u.listening != socket_path) continue;
      Snapshot s = pods;
      if (name == kDockershimSocket && !dockershim_reports_ips)
        for (PodRecord& p : s.pods) p.ips.clear();
      return s;
    }
    return absl::UnavailableError(absl::StrCat("connect ", socket_path, ": connection refused"));
  }
  absl::StatusOr<std::vector<ContainerLog>> RunningContainerLogs(const std::string&) override { return logs; }

  absl::Time Now() override { return absl::Now() + slept_; }
  void Sleep(absl::Duration d) override { slept_ += d; }

 private:
  absl::Status Act(const std::string& what, const std::function<absl::Status()>& op) {
    const int index = static_cast<int>(actions.size());
    actions.push_back(what);
    if (index != fail_at) return op();
    if (fail_after) (void)op();
    return absl::AbortedError(absl::StrCat("killed at: ", what));
  }
  // A unit file changed: systemd wants a daemon-reload.
  void Touched(const std::string& path) {
    for (const std::string& dir : paths_.unit_dirs)
      if (absl::StartsWith(path, dir)) reload_pending_ = true;
  }
  // The socket paths systemd has loaded from the unit files.
  void LoadSockets() {
    if (auto cri = ReadCriDockerdUnits(paths_.unit_dirs); cri.ok() && !cri->socket.empty())
      loaded_[cri->socket] = cri->socket_path;
    if (auto ours = ReadDockershimUnits(paths_.unit_dirs); ours.ok()) loaded_[kDockershimSocket] = ours->socket_path;
  }
  std::string Short(const std::string& path) const {
    for (const auto& [name, p] : std::map<std::string, std::string>{
             {"config", paths_.config}, {"dropin", paths_.dropin}, {"state", paths_.state}})
      if (path == p) return name;
    return path;
  }

  Paths paths_;
  bool reload_pending_ = false;
  std::map<std::string, std::string> loaded_;
  absl::Duration slept_;
};

constexpr char kOurService[] = "[Service]\nType=notify\nExecStart=/usr/bin/dockershim --container-runtime-endpoint fd://\n";
constexpr char kOurSocket[] = "[Socket]\nListenStream=/run/dockershim.sock\nSocketMode=0660\n";
constexpr char kPackagedConfig[] = "# dockershim configuration\n# root-directory = \"/var/lib/dockershim\"\n";

class MigrateStepsTest : public ::testing::Test {
 protected:
  MigrateStepsTest() {
    paths_.unit_dirs = {dir_ / "etc/systemd/system", dir_ / "lib/systemd/system"};
    paths_.dropin = dir_ / "etc/systemd/system/dockershim.socket.d/50-cri-dockerd-socket.conf";
    paths_.config = dir_ / "etc/dockershim/config.toml";
    paths_.state = dir_ / "var/lib/dockershim/migrate-state.json";
    paths_.dockershim_root = dir_ / "var/lib/dockershim";
  }

  // Both installed from their packages; cri-dockerd serves, dockershim's socket listens
  // on its own path (the package started it), its service never ran.
  void InstallBoth() {
    cri_binary_ = dir_.Write("usr/bin/cri-dockerd", "#!/bin/sh\n");
    dir_.Write("lib/systemd/system/cri-docker.service", absl::StrReplaceAll(testutil::kCriDockerService, {{"/usr/bin/cri-dockerd", cri_binary_}}));
    dir_.Write("lib/systemd/system/cri-docker.socket", testutil::kCriDockerSocket);
    dir_.Write("lib/systemd/system/dockershim.service", kOurService);
    dir_.Write("lib/systemd/system/dockershim.socket", kOurSocket);
    dir_.Write("etc/dockershim/config.toml", kPackagedConfig);
  }

  std::unique_ptr<FakeNode> Node() {
    auto node = std::make_unique<FakeNode>(paths_);
    const absl::Time long_ago = absl::Now() - absl::Hours(1);
    node->units["cri-docker.socket"] = {true, true, long_ago, kCriSocketPath};
    node->units["cri-docker.service"] = {true, true, long_ago, ""};
    node->units[kDockershimSocket] = {true, true, long_ago, kOurSocketPath};
    node->units[kDockershimService] = {false, false, absl::InfinitePast(), ""};
    node->pods.pods = {{"pod-web-0123456789", "web-0", "default", true, false, {"10.88.0.5"}},
                       {"pod-proxy-123456789", "kube-proxy-x", "kube-system", true, true, {}}};
    node->pods.containers = {{"ctr-app-0123456789", "pod-web-0123456789", "app", "CONTAINER_RUNNING"},
                             {"ctr-proxy-12345678", "pod-proxy-123456789", "kube-proxy", "CONTAINER_RUNNING"}};
    return node;
  }

  // The node as the switch from cri-dockerd left it.
  std::unique_ptr<FakeNode> SwitchedNode() {
    std::unique_ptr<FakeNode> node = Node();
    EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 0) << out_.str() << err_.str();
    node->actions.clear();
    out_.str("");
    // Running containers: dockershim's CRI files, Docker's json logs.
    for (const std::string name : {"app", "proxy", "journald"}) {
      ContainerLog log;
      log.id = name + "-id";
      log.name = "k8s_" + name + "_pod_ns_uid_0";
      log.cri_path = dir_.Write("var/log/pods/ns_pod_uid/" + name + "/0.log", "copied by dockershim\n");
      log.log_driver = name == "journald" ? "journald" : "json-file";
      if (name != "journald")
        log.docker_log = dir_.Write("var/lib/docker/containers/" + log.id + "/" + log.id + "-json.log", "{}\n");
      node->logs.push_back(log);
    }
    return node;
  }

  int Run(FakeNode& node, Direction direction, bool dry_run = false) {
    MigrateOptions options;
    options.direction = direction;
    options.dry_run = dry_run;
    options.check_timeout = absl::Seconds(5);
    options.paths = paths_;
    out_.str("");
    err_.str("");
    return Migrate(options, node, out_, err_);
  }

  // Every file under the temp dir and what it holds (links: where they point).
  std::map<std::string, std::string> Files() const {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path())) {
      if (e.is_symlink()) {
        files[e.path().string()] = "-> " + fs::read_symlink(e.path()).string();
      } else if (e.is_regular_file()) {
        files[e.path().string()] = TempDir::Read(e.path().string());
      }
    }
    return files;
  }
  // What a finished switch leaves; config backups (named by the time) aside.
  std::string EndState(const FakeNode& node) const {
    std::string s;
    for (const auto& [name, u] : node.units)
      absl::StrAppend(&s, name, " enabled=", u.enabled, " active=", u.active, " listening=", u.listening, "\n");
    for (const auto& [path, content] : Files())
      if (!absl::StrContains(path, ".bak-") && !absl::StrContains(path, "/usr/bin/"))
        absl::StrAppend(&s, path.substr(dir_.path().size()), ": ", content, "\n");
    return s;
  }

  TempDir dir_;
  Paths paths_;
  std::string cri_binary_;
  std::ostringstream out_, err_;
};

TEST_F(MigrateStepsTest, FromCriDockerdSwitchesOnItsSocketAndChecksThePods) {
  InstallBoth();
  std::unique_ptr<FakeNode> node = Node();
  ASSERT_EQ(Run(*node, Direction::kFromCriDockerd), 0) << out_.str() << err_.str();
  EXPECT_THAT(node->actions,
              ElementsAre("write state", "link config", "write config", "write dropin", "systemctl daemon-reload",
                          "systemctl disable cri-docker.socket cri-docker.service",
                          "systemctl enable dockershim.service",
                          "systemctl stop cri-docker.socket cri-docker.service",
                          "systemctl stop dockershim.socket",  // bound to its old path
                          "systemctl start dockershim.socket dockershim.service", "remove state"));
  EXPECT_EQ(node->units[kDockershimSocket].listening, kCriSocketPath);
  EXPECT_TRUE(node->units[kDockershimService].active);
  EXPECT_FALSE(node->units["cri-docker.socket"].enabled || node->units["cri-docker.service"].active);

  const std::string config = TempDir::Read(paths_.config);
  EXPECT_THAT(config, HasSubstr("root-directory = \"/var/lib/dockershim\"\n"
                                "cri-dockerd-root-directory = \"/var/lib/cri-dockerd\"\n"));
  EXPECT_EQ(node->checked_configs, std::vector<std::string>{config});
  bool backup = false;
  for (const auto& [path, content] : Files()) backup |= absl::StrContains(path, "config.toml.bak-") && content == kPackagedConfig;
  EXPECT_TRUE(backup) << "the package's config kept";
  EXPECT_THAT(TempDir::Read(paths_.dropin), HasSubstr("ListenStream=\nListenStream=/run/cri-dockerd.sock\n"
                                                       "SocketMode=0660\nSocketUser=root\nSocketGroup=docker\n"));
  EXPECT_FALSE(fs::exists(paths_.state));
  EXPECT_THAT(out_.str(), HasSubstr("default/web-0"));
  EXPECT_THAT(out_.str(), HasSubstr("The switch took"));
  EXPECT_THAT(out_.str(), HasSubstr("Every pod, its IP and every running container came through"));
  EXPECT_THAT(err_.str(), IsEmpty());
}

TEST_F(MigrateStepsTest, ADryRunSaysWhatItWouldDoAndChangesNothing) {
  InstallBoth();
  std::unique_ptr<FakeNode> node = Node();
  const auto files = Files();
  const std::string units = EndState(*node);
  ASSERT_EQ(Run(*node, Direction::kFromCriDockerd, /*dry_run=*/true), 0) << out_.str() << err_.str();
  EXPECT_THAT(node->actions, IsEmpty());
  EXPECT_EQ(Files(), files);
  EXPECT_EQ(EndState(*node), units);
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("would    take a snapshot of what cri-dockerd serves on /run/cri-dockerd.sock"));
  EXPECT_THAT(out, HasSubstr("would    write " + paths_.config));
  EXPECT_THAT(out, HasSubstr("cri-dockerd-root-directory = \"/var/lib/cri-dockerd\""));  // the config itself
  EXPECT_THAT(out, HasSubstr("ListenStream=/run/cri-dockerd.sock"));                    // and the drop-in
  EXPECT_THAT(out, HasSubstr("would    systemctl daemon-reload"));
  EXPECT_THAT(out, HasSubstr("would    stop cri-docker.socket, cri-docker.service"));
  EXPECT_THAT(out, HasSubstr("would    disable cri-docker.socket, cri-docker.service"));
  EXPECT_THAT(out, HasSubstr("would    stop dockershim.socket to start with the new settings"));
  EXPECT_THAT(out, HasSubstr("would    enable dockershim.service"));
  EXPECT_THAT(out, HasSubstr("would    start dockershim.service"));
  EXPECT_THAT(out, HasSubstr("would    check over /run/cri-dockerd.sock"));

  // The way back, from a switched node: the links it would make, the units.
  node = SwitchedNode();
  const auto switched = Files();
  ASSERT_EQ(Run(*node, Direction::kToCriDockerd, /*dry_run=*/true), 0) << out_.str() << err_.str();
  EXPECT_THAT(node->actions, IsEmpty());
  EXPECT_EQ(Files(), switched);
  EXPECT_THAT(out_.str(), HasSubstr("would    stop dockershim.socket, dockershim.service"));
  EXPECT_THAT(out_.str(), HasSubstr("would    remove " + paths_.dropin));
  EXPECT_THAT(out_.str(), HasSubstr("would    link " + (dir_ / "var/log/pods/ns_pod_uid/app/0.log")));
  EXPECT_THAT(out_.str(), HasSubstr("journald, not json-file"));
  EXPECT_THAT(out_.str(), HasSubstr("would    start cri-docker.socket, cri-docker.service"));
}

// kill -9 of the command at any point: each action either not done or done, and then
// nothing more. The next run finishes the job, to the same end as an uninterrupted one.
TEST_F(MigrateStepsTest, ARunKilledAtAnyActionIsFinishedByTheNext) {
  InstallBoth();
  const auto pristine = Files();
  std::unique_ptr<FakeNode> clean = Node();
  ASSERT_EQ(Run(*clean, Direction::kFromCriDockerd), 0) << out_.str() << err_.str();
  const std::string want = EndState(*clean);
  const size_t actions = clean->actions.size();
  for (size_t at = 0; at < actions; ++at) {
    for (bool after : {false, true}) {
      SCOPED_TRACE(absl::StrCat("killed ", after ? "after " : "before ", clean->actions[at]));
      fs::remove_all(dir_.path());
      for (const auto& [path, content] : pristine) dir_.Write(path.substr(dir_.path().size() + 1), content);
      std::unique_ptr<FakeNode> node = Node();
      node->fail_at = static_cast<int>(at);
      node->fail_after = after;
      const int first = Run(*node, Direction::kFromCriDockerd);
      // Killed while removing the state file after the check passed: the switch is done.
      if (clean->actions[at] != "remove state") {
        EXPECT_EQ(first, 1);
        EXPECT_THAT(err_.str(), HasSubstr("killed at: " + clean->actions[at]));
      }
      node->fail_at = -1;
      EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 0) << out_.str() << err_.str();
      EXPECT_EQ(EndState(*node), want);
    }
  }
}

TEST_F(MigrateStepsTest, ARunKilledOnTheWayBackIsFinishedByTheNext) {
  InstallBoth();
  std::unique_ptr<FakeNode> clean = SwitchedNode();
  const auto switched = Files();
  const std::vector<ContainerLog> logs = clean->logs;
  const auto units = clean->units;
  ASSERT_EQ(Run(*clean, Direction::kToCriDockerd), 0) << out_.str() << err_.str();
  const std::string want = EndState(*clean);
  EXPECT_THAT(want, HasSubstr("cri-docker.socket enabled=1 active=1 listening=/run/cri-dockerd.sock"));
  for (size_t at = 0; at < clean->actions.size(); ++at) {
    for (bool after : {false, true}) {
      SCOPED_TRACE(absl::StrCat("killed ", after ? "after " : "before ", clean->actions[at]));
      fs::remove_all(dir_.path());
      for (const auto& [path, content] : switched) dir_.Write(path.substr(dir_.path().size() + 1), content);
      FakeNode node(paths_);
      node.units = units;
      node.pods = clean->pods;
      node.logs = logs;
      node.fail_at = static_cast<int>(at);
      node.fail_after = after;
      Run(node, Direction::kToCriDockerd);
      node.fail_at = -1;
      EXPECT_EQ(Run(node, Direction::kToCriDockerd), 0) << out_.str() << err_.str();
      EXPECT_EQ(EndState(node), want);
    }
  }
}

TEST_F(MigrateStepsTest, ToCriDockerdLinksTheLogsBackAndRestoresItsSocket) {
  InstallBoth();
  std::unique_ptr<FakeNode> node = SwitchedNode();
  ASSERT_EQ(Run(*node, Direction::kToCriDockerd), 0) << out_.str() << err_.str();
  EXPECT_THAT(node->actions,
              ElementsAre("write state", "remove dropin", "systemctl daemon-reload",
                          "systemctl disable dockershim.socket dockershim.service",
                          "systemctl enable cri-docker.socket cri-docker.service",
                          "systemctl stop dockershim.socket dockershim.service", "relink 0.log", "relink 0.log",
                          "systemctl start cri-docker.socket cri-docker.service", "remove state"));
  for (const ContainerLog& log : node->logs) {
    if (log.log_driver == "json-file") {
      EXPECT_EQ(fs::read_symlink(log.cri_path), log.docker_log);
    } else {
      EXPECT_EQ(TempDir::Read(log.cri_path), "copied by dockershim\n");
    }
  }
  EXPECT_THAT(out_.str(), HasSubstr("k8s_journald_pod_ns_uid_0: " + node->logs[2].cri_path +
                                    " stays dockershim's copy, no longer updated: log driver journald"));
  EXPECT_FALSE(fs::exists(paths_.dropin));
  EXPECT_TRUE(fs::exists(paths_.config));  // for a later switch
  EXPECT_EQ(node->units["cri-docker.socket"].listening, kCriSocketPath);
  EXPECT_THAT(out_.str(), HasSubstr("cri-dockerd serves the node now"));
}

TEST_F(MigrateStepsTest, ToCriDockerdHandsOurCheckpointsOverToCriDockerd) {
  InstallBoth();
  const std::string cri_root = dir_ / "var/lib/cri-dockerd";
  dir_.Write("etc/systemd/system/cri-docker.service.d/10-root.conf",
             absl::StrCat("[Service]\nExecStart=\nExecStart=", cri_binary_,
                          " --container-runtime-endpoint fd:// --cri-dockerd-root-directory=", cri_root, "\n"));
  std::unique_ptr<FakeNode> node = SwitchedNode();
  // What dockershim wrote while it served: pods adopted from cri-dockerd (one whose
  // cri-dockerd checkpoint is gone), pods of its own (one with a hostPort), one adopted
  // from its labels, and files that are not its checkpoints.
  auto pod = [&](const std::string& id, const std::string& adopted_from) {
    SandboxCheckpoint c;
    c.sandbox_id = id;
    c.name = "pod-" + id;
    c.namespace_ = "ns";
    c.network_plugin = "cni";
    c.ip = "10.88.0.7";
    c.adopted_from = adopted_from;
    if (id == "web") c.port_mappings = {{"tcp", 80, 8080, ""}};
    return c;
  };
  auto ours = [&](const std::string& id, const std::string& adopted_from) {
    return dir_.Write("var/lib/dockershim/sandbox/" + id, EncodeCheckpoint(pod(id, adopted_from)));
  };
  auto theirs = [&](const std::string& id) { return dir_ / ("var/lib/cri-dockerd/sandbox/" + id); };
  const std::string adopted = ours("adopted", kAdoptedFromCriDockerd);
  const std::string orphan = ours("orphan", kAdoptedFromCriDockerd);
  const std::string web = ours("web", "");
  const std::string labels = ours("labels", kAdoptedFromLabels);
  const std::string corrupt = dir_.Write("var/lib/dockershim/sandbox/corrupt", "{");
  const std::string unreadable = ours("unreadable", "");
  const std::string adopted_theirs = dir_.Write("var/lib/cri-dockerd/sandbox/adopted",
                                                EncodeCriDockerdCheckpoint(pod("adopted", "")));
  dir_.Write("var/lib/cri-dockerd/sandbox/unreadable", "{");

  ASSERT_EQ(Run(*node, Direction::kToCriDockerd, /*dry_run=*/true), 0) << out_.str() << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("would    write cri-dockerd's checkpoint " + theirs("web") +
                                    " of pod ns/pod-web (1 port mappings, for cri-dockerd to tear down), then "
                                    "remove " + web));
  EXPECT_THAT(out_.str(), HasSubstr("would    remove dockershim's checkpoints of 1 pods that cri-dockerd has a "
                                    "checkpoint of"));
  EXPECT_THAT(out_.str(), HasSubstr("note     " + unreadable + " and " + theirs("unreadable") + " stay"));
  EXPECT_TRUE(fs::exists(adopted));
  EXPECT_FALSE(fs::exists(theirs("web")));

  ASSERT_EQ(Run(*node, Direction::kToCriDockerd), 0) << out_.str() << err_.str();
  for (const std::string id : {"labels", "orphan", "web"}) {
    EXPECT_THAT(node->actions, ::testing::Contains(absl::StrCat("write ", theirs(id)))) << id;
    const std::optional<std::string> text = common::ReadWholeFile(theirs(id));
    ASSERT_TRUE(text) << id;
    EXPECT_EQ(*text, EncodeCriDockerdCheckpoint(pod(id, ""))) << id;
    struct stat st {};
    ASSERT_EQ(::stat(theirs(id).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << "as cri-dockerd writes its own";
  }
  for (const std::string& gone : {adopted, orphan, web, labels}) EXPECT_FALSE(fs::exists(gone)) << gone;
  EXPECT_EQ(TempDir::Read(adopted_theirs), EncodeCriDockerdCheckpoint(pod("adopted", "")));  // as it was
  for (const std::string& kept : {corrupt, unreadable, theirs("unreadable")}) EXPECT_TRUE(fs::exists(kept)) << kept;
  for (const auto& entry : fs::directory_iterator(dir_ / "var/lib/cri-dockerd/sandbox"))
    EXPECT_NE(entry.path().filename().string().front(), '.') << "a temporary file is left";

  // A rerun finds nothing more to hand over.
  ASSERT_EQ(Run(*node, Direction::kToCriDockerd), 0) << out_.str() << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("already  no checkpoint of dockershim's to hand over"));
}

// kill -9 between the write of cri-dockerd's checkpoint and the removal of ours: the
// rerun removes ours, and writes cri-dockerd's no more.
TEST_F(MigrateStepsTest, CheckpointHandOverInterruptedIsFinishedByARerun) {
  SandboxCheckpoint c;
  c.sandbox_id = "web";
  c.name = "web";
  c.namespace_ = "ns";
  c.port_mappings = {{"tcp", 80, 8080, ""}};
  const std::string ours = dir_.Write("dockershim/sandbox/web", EncodeCheckpoint(c));
  const std::string theirs = dir_ / "cri-dockerd/sandbox/web";
  paths_.dockershim_root = dir_ / "dockershim";
  paths_.cri_dockerd_root = dir_ / "cri-dockerd";
  std::unique_ptr<FakeNode> node = Node();
  node->fail_at = 1;  // the removal of ours
  EXPECT_EQ(Run(*node, Direction::kCheckpointsToCriDockerd), 1);
  EXPECT_THAT(err_.str(), HasSubstr("Run the same command again to finish it"));
  EXPECT_TRUE(fs::exists(ours));
  EXPECT_EQ(TempDir::Read(theirs), EncodeCriDockerdCheckpoint(c));
  node->fail_at = -1;
  node->actions.clear();
  ASSERT_EQ(Run(*node, Direction::kCheckpointsToCriDockerd), 0) << out_.str() << err_.str();
  EXPECT_THAT(node->actions, ElementsAre("remove " + ours));
  EXPECT_FALSE(fs::exists(ours));
  EXPECT_EQ(TempDir::Read(theirs), EncodeCriDockerdCheckpoint(c));
}

TEST_F(MigrateStepsTest, ARerunComparesWithTheSnapshotTakenBeforeTheSwitch) {
  InstallBoth();
  std::unique_ptr<FakeNode> node = Node();
  node->fail_at = 8;  // killed once cri-dockerd is stopped: it can no longer be asked
  ASSERT_EQ(Run(*node, Direction::kFromCriDockerd), 1);
  ASSERT_THAT(node->actions.back(), HasSubstr("stop dockershim.socket"));
  node->fail_at = -1;
  node->pods.pods.pop_back();  // dockershim will not list kube-proxy
  EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 1);
  EXPECT_THAT(out_.str(), HasSubstr("already  snapshot of what cri-dockerd served, from the switch begun at"));
  EXPECT_THAT(out_.str(), HasSubstr("differs: pod kube-system/kube-proxy-x (pod-proxy-12) is not listed"));
  EXPECT_TRUE(fs::exists(paths_.state)) << "kept for the next rerun";
}

// kill -9 of either runtime: cri-dockerd before the switch (nothing changes), dockershim
// after its start (systemd restarts it; the check waits for it).
TEST_F(MigrateStepsTest, ARuntimeKilledOnTheWayIsWaitedForOrChangesNothing) {
  InstallBoth();
  std::unique_ptr<FakeNode> node = Node();
  const auto files = Files();
  node->unanswered = 1;
  EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 1);
  EXPECT_THAT(err_.str(), HasSubstr("cannot list what cri-dockerd serves: connect /run/cri-dockerd.sock: the runtime "
                                    "was killed; nothing was changed"));
  EXPECT_THAT(node->actions, IsEmpty());
  EXPECT_EQ(Files(), files);

  node->fail_at = 9;  // killed before starting dockershim
  EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 1);
  node->fail_at = -1;
  node->unanswered = 3;  // dockershim, started, does not answer at once
  EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 0) << out_.str() << err_.str();
  EXPECT_EQ(node->unanswered, 0);
  EXPECT_THAT(out_.str(), HasSubstr("Every pod, its IP and every running container came through"));
}

TEST_F(MigrateStepsTest, AFailedCheckSaysWhatDiffersAndHowToGoBack) {
  InstallBoth();
  std::unique_ptr<FakeNode> node = Node();
  node->dockershim_reports_ips = false;
  EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 1);
  EXPECT_THAT(out_.str(), HasSubstr("differs: pod default/web-0: IP 10.88.0.5 is now not reported"));
  EXPECT_THAT(out_.str(), HasSubstr("The check failed"));
  EXPECT_THAT(out_.str(), HasSubstr("switch back: dockershim migrate to-cri-dockerd"));
  // It does not switch back by itself.
  EXPECT_TRUE(node->units[kDockershimService].active);
  EXPECT_FALSE(node->units["cri-docker.service"].active);
  EXPECT_TRUE(fs::exists(paths_.state));
}

TEST_F(MigrateStepsTest, NotInstalledOrWithUnknownFlagsNothingChanges) {
  dir_.Write("lib/systemd/system/dockershim.service", kOurService);
  dir_.Write("lib/systemd/system/dockershim.socket", kOurSocket);
  std::unique_ptr<FakeNode> node = Node();
  auto files = Files();
  for (Direction d : {Direction::kFromCriDockerd, Direction::kToCriDockerd}) {
    EXPECT_EQ(Run(*node, d), 1);
    EXPECT_THAT(err_.str(), HasSubstr("cri-dockerd is not installed: no cri-docker.service or cri-dockerd.service in"));
    EXPECT_THAT(err_.str(), Not(HasSubstr("half done")));
  }
  EXPECT_THAT(node->actions, IsEmpty());
  EXPECT_EQ(Files(), files);

  InstallBoth();
  dir_.Write("etc/systemd/system/cri-docker.service.d/flags.conf",
             absl::StrCat("[Service]\nExecStart=\nExecStart=", cri_binary_,
                          " --container-runtime-endpoint fd:// --pod-cidr=10.244.0.0/16 --hairpin-mode hairpin-veth "
                          "--network-plugin=cni\n"));
  files = Files();
  EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 1);
  EXPECT_THAT(err_.str(), HasSubstr("cri-dockerd runs with flags that dockershim has no equivalent for"));
  EXPECT_THAT(err_.str(), HasSubstr("  --pod-cidr=10.244.0.0/16: only kubenet"));
  EXPECT_THAT(err_.str(), HasSubstr("  --hairpin-mode hairpin-veth: kubenet's"));
  EXPECT_THAT(err_.str(), HasSubstr("Nothing was changed"));
  EXPECT_THAT(node->actions, IsEmpty());
  EXPECT_EQ(Files(), files);

  // A value dockershim refuses, in its own words.
  fs::remove(dir_ / "etc/systemd/system/cri-docker.service.d/flags.conf");
  node->config_error = absl::InvalidArgumentError("--network-plugin: kubenet is not supported; use cni");
  EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 1);
  EXPECT_THAT(err_.str(), HasSubstr("dockershim would not start with cri-dockerd's settings: --network-plugin: kubenet"));
  EXPECT_THAT(node->actions, IsEmpty());

  // The way back needs cri-dockerd's program.
  fs::remove(cri_binary_);
  EXPECT_EQ(Run(*node, Direction::kToCriDockerd), 1);
  EXPECT_THAT(err_.str(), HasSubstr("cri-dockerd's program " + cri_binary_));
  EXPECT_THAT(node->actions, IsEmpty());
}

TEST_F(MigrateStepsTest, ASystemctlFailureIsQuotedAndTheRerunAdvised) {
  InstallBoth();
  std::unique_ptr<FakeNode> node = Node();
  node->systemctl_errors["start"] =
      "systemctl start dockershim.socket dockershim.service failed (exit code 1): Job for dockershim.service failed";
  EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 1);
  EXPECT_THAT(err_.str(), HasSubstr("Job for dockershim.service failed"));
  EXPECT_THAT(err_.str(), HasSubstr("The switch is half done; no pod was stopped. Run the same command again"));
  node->systemctl_errors.clear();
  EXPECT_EQ(Run(*node, Direction::kFromCriDockerd), 0) << out_.str() << err_.str();
}

TEST_F(MigrateStepsTest, AConfigurationThatSaysTheSameIsLeftAlone) {
  InstallBoth();
  std::unique_ptr<FakeNode> first = Node();
  ASSERT_EQ(Run(*first, Direction::kFromCriDockerd), 0) << out_.str() << err_.str();
  const std::string config = TempDir::Read(paths_.config);
  // Switched back by hand; the configuration stays.
  fs::remove(paths_.dropin);
  std::unique_ptr<FakeNode> node = Node();
  ASSERT_EQ(Run(*node, Direction::kFromCriDockerd), 0) << out_.str() << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("already  write " + paths_.config));
  EXPECT_EQ(TempDir::Read(paths_.config), config);
  EXPECT_THAT(node->actions, Not(::testing::Contains("write config")));
  EXPECT_THAT(node->actions, Not(::testing::Contains("link config")));
}

TEST_F(MigrateStepsTest, WhenTheSocketCannotBeTakenOverTheKubeletLineIsPrinted) {
  InstallBoth();
  dir_.Write("etc/systemd/system/cri-docker.socket.d/two.conf", "[Socket]\nListenStream=/run/second.sock\n");
  std::unique_ptr<FakeNode> node = Node();
  ASSERT_EQ(Run(*node, Direction::kFromCriDockerd), 0) << out_.str() << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("cri-docker.socket has 2 ListenStream= settings, not one"));
  EXPECT_THAT(out_.str(), HasSubstr("--container-runtime-endpoint=unix:///run/dockershim.sock"));
  EXPECT_FALSE(fs::exists(paths_.dropin));
  EXPECT_EQ(node->units[kDockershimSocket].listening, kOurSocketPath);
}

TEST(SystemctlShowTest, TheUnitsStateAsSystemdPrintsIt) {
  UnitStatus s = ParseSystemctlShow(
      "NeedDaemonReload=no\nActiveState=active\nUnitFileState=enabled\n"
      "ActiveEnterTimestamp=Sun 2026-12-06 04:40:00.123456 UTC\n");
  EXPECT_TRUE(s.enabled);
  EXPECT_TRUE(s.active);
  EXPECT_FALSE(s.need_reload);
  EXPECT_EQ(s.active_since, absl::FromUnixMicros(1796532000123456));
  s = ParseSystemctlShow("UnitFileState=disabled\nActiveState=inactive\nNeedDaemonReload=yes\nActiveEnterTimestamp=\n");
  EXPECT_FALSE(s.enabled);
  EXPECT_FALSE(s.active);
  EXPECT_TRUE(s.need_reload);
  EXPECT_EQ(s.active_since, absl::InfinitePast());
  s = ParseSystemctlShow("UnitFileState=enabled-runtime\nActiveState=activating\n");
  EXPECT_TRUE(s.enabled);
  EXPECT_TRUE(s.active);
  EXPECT_FALSE(ParseSystemctlShow("UnitFileState=static\nActiveState=failed\n").active);
}

}  // namespace
}  // namespace shim::migrate
