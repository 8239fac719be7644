// dockershim migrate: cri-dockerd's flags mapped to dockershim's configuration (every
// mapped flag, every refused one), cri-dockerd's units as installed (its packaged
// default, drop-ins, environment), and the files written from them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_split.h"
#include "shim/migrate/cri_dockerd_flags.h"
#include "shim/migrate/installation.h"
#include "shim/migrate/node_files.h"
#include "tests/unit/cri_dockerd_units.h"
#include "tests/unit/temp_dir.h"

namespace shim::migrate {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using testutil::TempDir;

CriDockerdFlags Map(const std::string& command_line) {
  return MapCriDockerdFlags(absl::StrSplit(command_line, ' ', absl::SkipEmpty()));
}

std::vector<std::string> RefusedFlags(const CriDockerdFlags& flags) {
  std::vector<std::string> out;
  for (const Refusal& r : flags.refused) out.push_back(r.flag);
  return out;
}

TEST(CriDockerdFlagsTest, ThePackagedDefaultMapsToNothingButItsDefaults) {
  const CriDockerdFlags flags = Map("--container-runtime-endpoint fd://");
  EXPECT_THAT(flags.refused, IsEmpty());
  EXPECT_THAT(flags.config, IsEmpty());
  EXPECT_EQ(flags.runtime_endpoint, "fd://");
  EXPECT_EQ(flags.docker_endpoint, "unix:///var/run/docker.sock");
  EXPECT_EQ(flags.root_directory, "/var/lib/cri-dockerd");
  // Without the flag, cri-dockerd serves its default socket.
  EXPECT_EQ(Map("").runtime_endpoint, "unix:///var/run/cri-dockerd.sock");
}

TEST(CriDockerdFlagsTest, EveryMappedFlagBecomesTheKeyOfItsName) {
  const CriDockerdFlags flags = Map(
      "--docker-endpoint unix:///run/other-docker.sock --cri-dockerd-root-directory=/srv/cri-dockerd "
      "--pod-infra-container-image registry.example/pause:3.9 --image-pull-progress-deadline=5m "
      "--runtime-request-timeout 4m --streaming-bind-addr=10.0.0.5:10010 --network-plugin cni "
      "--cni-bin-dir=/opt/cni/bin --cni-conf-dir /etc/cni/net.d --cni-cache-dir=/var/lib/cni/cache "
      "--runtime-cgroups /docker-runtime --log-level=debug");
  EXPECT_THAT(flags.refused, IsEmpty());
  EXPECT_THAT(flags.config,
              ElementsAre(Pair("docker-endpoint", "unix:///run/other-docker.sock"),
                          Pair("cri-dockerd-root-directory", "/srv/cri-dockerd"),
                          Pair("pod-infra-container-image", "registry.example/pause:3.9"),
                          Pair("image-pull-progress-deadline", "5m"), Pair("runtime-request-timeout", "4m"),
                          Pair("streaming-bind-addr", "10.0.0.5:10010"), Pair("network-plugin", "cni"),
                          Pair("cni-bin-dir", "/opt/cni/bin"), Pair("cni-conf-dir", "/etc/cni/net.d"),
                          Pair("cni-cache-dir", "/var/lib/cni/cache"), Pair("runtime-cgroups", "/docker-runtime"),
                          Pair("log-level", "debug")));
  EXPECT_EQ(flags.docker_endpoint, "unix:///run/other-docker.sock");
  EXPECT_EQ(flags.root_directory, "/srv/cri-dockerd");
}

TEST(CriDockerdFlagsTest, ValuesWithDifferentMeaningsAndRepeatedFlags) {
  // An empty plugin is Docker's bridge in cri-dockerd: "docker" here. Zero durations
  // and an empty bind address are cri-dockerd's "unbounded" and "everywhere": left to
  // dockershim's defaults, with a note.
  const CriDockerdFlags flags = Map(
      "--network-plugin= --runtime-request-timeout=0s --image-pull-progress-deadline 0 --streaming-bind-addr= "
      "--log-level=info --log-level=warn");
  EXPECT_THAT(flags.refused, IsEmpty());
  EXPECT_THAT(flags.config, ElementsAre(Pair("network-plugin", "docker"), Pair("log-level", "warn")));
  ASSERT_EQ(flags.notes.size(), 3u);
  EXPECT_THAT(flags.notes[0], HasSubstr("--runtime-request-timeout=0s"));
  EXPECT_THAT(flags.notes[1], HasSubstr("--image-pull-progress-deadline=0"));
  EXPECT_THAT(flags.notes[2], HasSubstr("127.0.0.1:0"));
}

TEST(CriDockerdFlagsTest, EveryFlagWithoutAnEquivalentIsRefusedByName) {
  const CriDockerdFlags flags = Map(
      "--pod-cidr=10.244.0.0/16 --ipv6-dual-stack --network-plugin-mtu 1400 --hairpin-mode=hairpin-veth "
      "--buildinfo --version -h --help --v=5 -v --unknown-flag x --network-plugin=cni");
  EXPECT_THAT(RefusedFlags(flags),
              ElementsAre("--pod-cidr=10.244.0.0/16", "--ipv6-dual-stack", "--network-plugin-mtu 1400",
                          "--hairpin-mode=hairpin-veth", "--buildinfo", "--version", "-h", "--help", "--v=5", "-v",
                          "--unknown-flag", "x"));
  EXPECT_THAT(flags.refused[0].reason, HasSubstr("UpdateRuntimeConfig"));
  EXPECT_THAT(flags.refused[2].reason, HasSubstr("mtu"));
  EXPECT_THAT(flags.refused[8].reason, HasSubstr("not a cri-dockerd flag"));
  EXPECT_THAT(flags.refused[11].reason, HasSubstr("no arguments"));
  // What is mapped is still mapped: the refusal lists only what has no equivalent.
  EXPECT_THAT(flags.config, ElementsAre(Pair("network-plugin", "cni")));
}

TEST(CriDockerdFlagsTest, FalseBooleansEndpointsAndMissingValues) {
  EXPECT_THAT(Map("--ipv6-dual-stack=false").refused, IsEmpty());  // as if absent
  EXPECT_THAT(RefusedFlags(Map("--container-runtime-endpoint tcp://0.0.0.0:2376")),
              ElementsAre("--container-runtime-endpoint tcp://0.0.0.0:2376"));
  EXPECT_EQ(Map("--container-runtime-endpoint=unix:///run/cri.sock").runtime_endpoint, "unix:///run/cri.sock");
  EXPECT_THAT(RefusedFlags(Map("--network-plugin")), ElementsAre("--network-plugin"));
  EXPECT_THAT(RefusedFlags(Map("-- --network-plugin=cni")), ElementsAre("--network-plugin=cni"));
  EXPECT_EQ(UnixSocketPath("unix:///run/a.sock"), "/run/a.sock");
  EXPECT_EQ(UnixSocketPath("/run/a.sock"), "/run/a.sock");
  EXPECT_EQ(UnixSocketPath("fd://"), "");
}


class InstallationTest : public ::testing::Test {
 protected:
  std::vector<std::string> Dirs() const { return {dir_ / "etc/systemd/system", dir_ / "lib/systemd/system"}; }
  void Packaged() {
    dir_.Write("lib/systemd/system/cri-docker.service", testutil::kCriDockerService);
    dir_.Write("lib/systemd/system/cri-docker.socket", testutil::kCriDockerSocket);
  }
  TempDir dir_;
};

TEST_F(InstallationTest, ThePackagedUnitsServeTheirSocketThroughSystemd) {
  Packaged();
  absl::StatusOr<CriDockerdUnits> units = ReadCriDockerdUnits(Dirs());
  ASSERT_TRUE(units.ok()) << units.status();
  EXPECT_EQ(units->service, "cri-docker.service");
  EXPECT_EQ(units->socket, "cri-docker.socket");
  EXPECT_THAT(units->argv, ElementsAre("/usr/bin/cri-dockerd", "--container-runtime-endpoint", "fd://"));
  EXPECT_TRUE(units->socket_activated);
  EXPECT_EQ(units->socket_path, "/run/cri-dockerd.sock");
  EXPECT_EQ(units->access.mode, "0660");
  EXPECT_EQ(units->access.group, "docker");
  EXPECT_THAT(units->files, ElementsAre(dir_ / "lib/systemd/system/cri-docker.service",
                                        dir_ / "lib/systemd/system/cri-docker.socket"));
}

TEST_F(InstallationTest, ADropInWithAnEnvironmentFileAndAnOwnSocketPath) {
  Packaged();
  const std::string env = dir_.Write("etc/default/cri-dockerd", "CRI_DOCKERD_OPTS='--network-plugin=cni --log-level=debug'\n");
  dir_.Write("etc/systemd/system/cri-docker.service.d/override.conf",
             absl::StrCat("[Service]\nEnvironmentFile=-", env, "\nExecStart=\n",
                          "ExecStart=/usr/local/bin/cri-dockerd --container-runtime-endpoint fd:// $CRI_DOCKERD_OPTS\n"));
  dir_.Write("etc/systemd/system/cri-docker.socket.d/path.conf",
             "[Socket]\nListenStream=\nListenStream=/var/run/cri-dockerd.sock\nSocketGroup=kube\n");
  absl::StatusOr<CriDockerdUnits> units = ReadCriDockerdUnits(Dirs());
  ASSERT_TRUE(units.ok()) << units.status();
  EXPECT_THAT(units->argv, ElementsAre("/usr/local/bin/cri-dockerd", "--container-runtime-endpoint", "fd://",
                                       "--network-plugin=cni", "--log-level=debug"));
  EXPECT_THAT(units->flags.config, ElementsAre(Pair("network-plugin", "cni"), Pair("log-level", "debug")));
  EXPECT_EQ(units->socket_path, "/var/run/cri-dockerd.sock");
  EXPECT_EQ(units->access.group, "kube");
  EXPECT_EQ(units->access.mode, "0660");
}

TEST_F(InstallationTest, NotInstalledOrNotOneSocketPath) {
  absl::StatusOr<CriDockerdUnits> none = ReadCriDockerdUnits(Dirs());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("cri-dockerd is not installed"));

  Packaged();
  dir_.Write("etc/systemd/system/cri-docker.socket.d/tcp.conf", "[Socket]\nListenStream=\nListenStream=0.0.0.0:2376\n");
  absl::StatusOr<CriDockerdUnits> tcp = ReadCriDockerdUnits(Dirs());
  ASSERT_TRUE(tcp.ok()) << tcp.status();
  EXPECT_EQ(tcp->socket_path, "");
  EXPECT_THAT(tcp->socket_problem, HasSubstr("not a unix socket path"));

  // Its own socket, not systemd's: the endpoint's path, whatever the socket unit says.
  dir_.Write("etc/systemd/system/cri-docker.service.d/own.conf",
             "[Service]\nExecStart=\nExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint "
             "unix:///var/run/cri-dockerd.sock\n");
  absl::StatusOr<CriDockerdUnits> own = ReadCriDockerdUnits(Dirs());
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_FALSE(own->socket_activated);
  EXPECT_EQ(own->socket_path, "/var/run/cri-dockerd.sock");

  dir_.Write("etc/systemd/system/cri-docker.service.d/two.conf", "[Service]\nExecStart=/bin/true\n");
  EXPECT_THAT(std::string(ReadCriDockerdUnits(Dirs()).status().message()), HasSubstr("2 ExecStart= commands"));
}

TEST_F(InstallationTest, DockershimsUnitsAndItsSocketPath) {
  EXPECT_THAT(std::string(ReadDockershimUnits(Dirs()).status().message()), HasSubstr("install the dockershim package"));
  dir_.Write("lib/systemd/system/dockershim.service", "[Service]\nExecStart=/usr/bin/dockershim\n");
  dir_.Write("lib/systemd/system/dockershim.socket", "[Socket]\nListenStream=/run/dockershim.sock\n");
  EXPECT_EQ(ReadDockershimUnits(Dirs())->socket_path, "/run/dockershim.sock");
  dir_.Write("etc/systemd/system/dockershim.socket.d/x.conf", "[Socket]\nListenStream=\nListenStream=/run/cri-dockerd.sock\n");
  EXPECT_EQ(ReadDockershimUnits(Dirs())->socket_path, "/run/cri-dockerd.sock");
}

TEST_F(InstallationTest, TheConfigurationKeepsDockershimsOwnKeysAndRendersTheSameTwice) {
  Packaged();
  dir_.Write("etc/systemd/system/cri-docker.service.d/flags.conf",
             "[Service]\nExecStart=\nExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd:// "
             "--network-plugin=cni --pod-infra-container-image=registry.example/pause:3.9 --cni-bin-dir=C:\\\\cni\n");
  absl::StatusOr<CriDockerdUnits> units = ReadCriDockerdUnits(Dirs());
  ASSERT_TRUE(units.ok()) << units.status();
  const std::string previous =
      "# the package's file\n# log-level = \"info\"\nmetrics-bind-addr = \":9090\"\nnetwork-plugin = \"docker\"\n"
      "root-directory = \"/var/lib/cri-dockerd\"\n  relist-from-memory = false\n";
  absl::StatusOr<std::string> config = RenderConfig(*units, previous);
  ASSERT_TRUE(config.ok()) << config.status();
  // Keys only (comments aside): the state directories, cri-dockerd's flags, then the
  // previous file's keys that cri-dockerd has no flag for.
  std::vector<std::string> keys;
  for (absl::string_view line : absl::StrSplit(*config, '\n'))
    if (!line.empty() && line[0] != '#') keys.emplace_back(line);
  EXPECT_THAT(keys, ElementsAre("root-directory = \"/var/lib/dockershim\"",
                                "cri-dockerd-root-directory = \"/var/lib/cri-dockerd\"", "network-plugin = \"cni\"",
                                "pod-infra-container-image = \"registry.example/pause:3.9\"",
                                "cni-bin-dir = 'C:\\cni'", "metrics-bind-addr = \":9090\"",
                                "relist-from-memory = false"));
  EXPECT_EQ(*RenderConfig(*units, *config), *config);

  units->flags.config.emplace_back("log-level", "it's \"quoted\"");
  EXPECT_EQ(RenderConfig(*units, "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(InstallationTest, TheSocketDropInTakesCriDockerdsPathAndAccess) {
  Packaged();
  absl::StatusOr<CriDockerdUnits> units = ReadCriDockerdUnits(Dirs());
  ASSERT_TRUE(units.ok()) << units.status();
  const std::string dropin = RenderSocketDropIn(*units);
  EXPECT_THAT(dropin, HasSubstr("[Socket]\nListenStream=\nListenStream=/run/cri-dockerd.sock\nSocketMode=0660\n"
                                "SocketUser=root\nSocketGroup=docker\n"));
  // Read back as systemd does, over dockershim's packaged socket.
  dir_.Write("lib/systemd/system/dockershim.service", "[Service]\nExecStart=/usr/bin/dockershim\n");
  dir_.Write("lib/systemd/system/dockershim.socket", "[Socket]\nListenStream=/run/dockershim.sock\nSocketMode=0660\n");
  dir_.Write("etc/systemd/system/dockershim.socket.d/cri.conf", dropin);
  EXPECT_EQ(ReadDockershimUnits(Dirs())->socket_path, "/run/cri-dockerd.sock");
}

}  // namespace
}  // namespace shim::migrate
