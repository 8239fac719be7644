#include "dockerclient/types.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dockerclient {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(DockerTypesTest, ParseVersion) {
  const VersionInfo v = ParseVersion(json::parse(R"({
    "Version": "20.10.24+dfsg1", "ApiVersion": "1.41", "MinAPIVersion": "1.12",
    "Os": "linux", "Arch": "amd64", "KernelVersion": "6.1.0-18-amd64", "GoVersion": "go1.19.8"})"));
  EXPECT_EQ(v.version, "20.10.24+dfsg1");
  EXPECT_EQ(v.api_version, "1.41");
  EXPECT_EQ(v.min_api_version, "1.12");
  EXPECT_EQ(v.os, "linux");
  EXPECT_EQ(v.arch, "amd64");
  EXPECT_EQ(v.kernel_version, "6.1.0-18-amd64");
}

TEST(DockerTypesTest, ParseInfo) {
  const json j = json::parse(R"js({
    "ID": "ABCD:EFGH", "Name": "node-1", "DockerRootDir": "/var/lib/docker", "Driver": "overlay2",
    "CgroupDriver": "systemd", "CgroupVersion": "2", "DefaultRuntime": "runc",
    "Runtimes": {"runc": {"path": "runc"}, "io.containerd.runc.v2": {"path": "runc"}},
    "ServerVersion": "24.0.7", "KernelVersion": "6.1.0", "OperatingSystem": "Debian GNU/Linux 12 (bookworm)"})js");
  const SystemInfo s = ParseInfo(j);
  EXPECT_EQ(s.id, "ABCD:EFGH");
  EXPECT_EQ(s.name, "node-1");
  EXPECT_EQ(s.docker_root_dir, "/var/lib/docker");
  EXPECT_EQ(s.driver, "overlay2");
  EXPECT_EQ(s.cgroup_driver, "systemd");
  EXPECT_EQ(s.cgroup_version, "2");
  EXPECT_EQ(s.default_runtime, "runc");
  EXPECT_THAT(s.runtimes, ElementsAre("io.containerd.runc.v2", "runc"));
  EXPECT_EQ(s.server_version, "24.0.7");
  EXPECT_EQ(s.kernel_version, "6.1.0");
  EXPECT_EQ(s.operating_system, "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(s.raw, j);
}

TEST(DockerTypesTest, ParseInfoOfTheContainerdImageStore) {
  // Docker 29.7.2 (API 1.55), its default store.
  const SystemInfo s = ParseInfo(json::parse(R"({
    "Driver": "overlayfs", "DriverStatus": [["driver-type", "io.containerd.snapshotter.v1"]],
    "DockerRootDir": "/var/lib/docker",
    "Containerd": {"Address": "/run/containerd/containerd.sock",
                   "Namespaces": {"Containers": "moby", "Plugins": "plugins.moby"}}})"));
  EXPECT_EQ(s.driver, "overlayfs");
  EXPECT_EQ(s.driver_type, "io.containerd.snapshotter.v1");
  EXPECT_EQ(s.containerd_address, "/run/containerd/containerd.sock");
  EXPECT_EQ(s.containerd_namespace, "moby");
  // A graph driver (overlay2 on 28.5): its status lines, no driver type.
  const SystemInfo graph = ParseInfo(json::parse(R"({"Driver": "overlay2", "DriverStatus": [
    ["Backing Filesystem", "extfs"], ["Supports d_type", "true"], ["Native Overlay Diff", "true"]]})"));
  EXPECT_EQ(graph.driver_type, "");
  EXPECT_EQ(graph.containerd_address, "");
}

TEST(DockerTypesTest, ParseImageSummary) {
  const ImageSummary s = ParseImageSummary(json::parse(R"({
    "Id": "sha256:aaa", "RepoTags": ["busybox:latest", "busybox:1.36"],
    "RepoDigests": ["busybox@sha256:bbb"], "Size": 4261550, "Created": 1700000000,
    "Labels": {"maintainer": "me"}, "Containers": -1})"));
  EXPECT_EQ(s.id, "sha256:aaa");
  EXPECT_THAT(s.repo_tags, ElementsAre("busybox:latest", "busybox:1.36"));
  EXPECT_THAT(s.repo_digests, ElementsAre("busybox@sha256:bbb"));
  EXPECT_EQ(s.size, 4261550);
  EXPECT_EQ(s.created, 1700000000);
  EXPECT_THAT(s.labels, ElementsAre(Pair("maintainer", "me")));
}

TEST(DockerTypesTest, ParseImageInspect) {
  const json j = json::parse(R"({
    "Id": "sha256:aaa", "RepoTags": ["registry:5000/app:v1"], "RepoDigests": [],
    "Size": 1234, "Created": "2023-11-14T22:13:20.123Z", "Os": "linux", "Architecture": "arm64",
    "Config": {"User": "1000:1000", "Env": ["PATH=/bin", "A=b"], "Entrypoint": ["/init"],
               "Cmd": ["serve", "--port=80"], "WorkingDir": "/app", "Labels": {"a": "1", "b": "2"},
               "Volumes": {"/data": {}, "/cache": {}}, "StopSignal": "SIGQUIT"}})");
  const ImageInspect i = ParseImageInspect(j);
  EXPECT_EQ(i.id, "sha256:aaa");
  EXPECT_THAT(i.repo_tags, ElementsAre("registry:5000/app:v1"));
  EXPECT_THAT(i.repo_digests, IsEmpty());
  EXPECT_EQ(i.size, 1234);
  EXPECT_EQ(i.created, "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(i.os, "linux");
  EXPECT_EQ(i.architecture, "arm64");
  EXPECT_EQ(i.config.user, "1000:1000");
  EXPECT_THAT(i.config.env, ElementsAre("PATH=/bin", "A=b"));
  EXPECT_THAT(i.config.entrypoint, ElementsAre("/init"));
  EXPECT_THAT(i.config.cmd, ElementsAre("serve", "--port=80"));
  EXPECT_EQ(i.config.working_dir, "/app");
  EXPECT_THAT(i.config.labels, ElementsAre(Pair("a", "1"), Pair("b", "2")));
  EXPECT_THAT(i.config.volumes, ElementsAre("/cache", "/data"));
  EXPECT_EQ(i.config.stop_signal, "SIGQUIT");
  EXPECT_EQ(i.raw, j);
}

TEST(DockerTypesTest, ImageInspectWithNullConfigAndLists) {
  const ImageInspect i = ParseImageInspect(json::parse(R"({
    "Id": "sha256:aaa", "RepoTags": null, "RepoDigests": null, "Config": null})"));
  EXPECT_EQ(i.id, "sha256:aaa");
  EXPECT_THAT(i.repo_tags, IsEmpty());
  EXPECT_THAT(i.repo_digests, IsEmpty());
  EXPECT_TRUE(i.config.cmd.empty());
  EXPECT_TRUE(i.config.labels.empty());
  EXPECT_TRUE(i.config.volumes.empty());

  const ImageInspect nulls = ParseImageInspect(json::parse(R"({"Config": {
    "Env": null, "Entrypoint": null, "Cmd": null, "Labels": null, "Volumes": null, "User": null}})"));
  EXPECT_TRUE(nulls.config.env.empty());
  EXPECT_TRUE(nulls.config.entrypoint.empty());
  EXPECT_TRUE(nulls.config.user.empty());
}

TEST(DockerTypesTest, ImageInspectOfApi152AndLaterOmitsEmptyConfigFields) {
  // Docker 29.7.2 at API 1.55 (containerd store, with manifests=1): Config has only what
  // is set; Parent, DockerVersion, Author and GraphDriver are gone.
  const ImageInspect i = ParseImageInspect(json::parse(R"({
    "Id": "sha256:a966", "RepoTags": ["dockershim-test/busybox:latest"],
    "RepoDigests": ["dockershim-test/busybox@sha256:a966"], "Comment": "Imported from -",
    "Created": "2026-12-06T04:35:08.900982501Z", "Config": {"Cmd": ["sh"], "Labels": {"k": "v"}},
    "Architecture": "amd64", "Os": "linux", "Size": 2233683,
    "RootFS": {"Type": "layers", "Layers": ["sha256:db0b"]}, "Metadata": {"LastTagTime": "2026-12-06T04:42:53Z"},
    "Descriptor": {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "digest": "sha256:a966",
                   "size": 422},
    "Manifests": [{"ID": "sha256:a966", "Available": true, "Size": {"Content": 2233683, "Total": 4293971},
                   "Kind": "image", "ImageData": {"Platform": {"architecture": "amd64", "os": "linux"},
                                                  "Size": {"Unpacked": 2060288}}}]})"));
  EXPECT_EQ(i.id, "sha256:a966");
  EXPECT_TRUE(i.config.user.empty());
  EXPECT_TRUE(i.config.env.empty());
  EXPECT_TRUE(i.config.entrypoint.empty());
  EXPECT_THAT(i.config.cmd, ElementsAre("sh"));
  EXPECT_TRUE(i.config.volumes.empty());
  EXPECT_EQ(i.config.working_dir, "");
  EXPECT_EQ(i.size, 4293971) << "the manifests' content and snapshots, as the image list says";
}

TEST(DockerTypesTest, ImageSizeOnTheContainerdStoreIsEveryPlatformsContentAndSnapshots) {
  // A two-platform index of which this node pulled one: the other's manifest is not
  // available (no content, no snapshot).
  const ImageInspect i = ParseImageInspect(json::parse(R"({"Id": "sha256:index", "Size": 1074657, "Manifests": [
    {"ID": "sha256:amd64", "Available": true, "Size": {"Content": 1074657, "Total": 3134945}, "Kind": "image"},
    {"ID": "sha256:arm64", "Available": false, "Size": {"Content": 0, "Total": 0}, "Kind": "image"},
    {"ID": "sha256:att", "Available": true, "Size": {"Content": 840, "Total": 840}, "Kind": "attestation"}]})"));
  EXPECT_EQ(i.size, 3134945 + 840);
  // A graph driver has no manifests: Size as it is.
  EXPECT_EQ(ParseImageInspect(json::parse(R"({"Size": 1986689, "Manifests": null})")).size, 1986689);
}

TEST(DockerTypesTest, EntrypointAsLoneStringIsOneElement) {
  const ImageInspect i = ParseImageInspect(json::parse(R"({"Config": {"Entrypoint": "/bin/sh"}})"));
  EXPECT_THAT(i.config.entrypoint, ElementsAre("/bin/sh"));
}

TEST(DockerTypesTest, ParseContainerSummary) {
  const ContainerSummary s = ParseContainerSummary(json::parse(R"({
    "Id": "abc123", "Names": ["/k8s_POD_web_default_uid_0"], "Image": "pause:3.9", "ImageID": "sha256:ppp",
    "Created": 1700000001, "State": "running", "Status": "Up 5 minutes",
    "Labels": {"io.kubernetes.docker.type": "podsandbox"}})"));
  EXPECT_EQ(s.id, "abc123");
  EXPECT_THAT(s.names, ElementsAre("/k8s_POD_web_default_uid_0"));
  EXPECT_EQ(s.image, "pause:3.9");
  EXPECT_EQ(s.image_id, "sha256:ppp");
  EXPECT_EQ(s.created, 1700000001);
  EXPECT_EQ(s.state, "running");
  EXPECT_EQ(s.status, "Up 5 minutes");
  EXPECT_THAT(s.labels, ElementsAre(Pair("io.kubernetes.docker.type", "podsandbox")));
}

TEST(DockerTypesTest, ParseContainerInspect) {
  const json j = json::parse(R"({
    "Id": "abc123", "Name": "/web", "Created": "2023-11-14T22:13:20Z", "Image": "sha256:iii",
    "LogPath": "/var/lib/docker/containers/abc123/abc123-json.log",
    "State": {"Status": "exited", "Running": false, "Paused": false, "Restarting": false,
              "OOMKilled": true, "Dead": false, "Pid": 0, "ExitCode": 137, "Error": "",
              "StartedAt": "2023-11-14T22:13:21Z", "FinishedAt": "2023-11-14T22:14:00Z"},
    "Config": {"Image": "nginx:1.25", "Hostname": "web-0", "Labels": {"k": "v"}, "Env": ["A=1"]},
    "HostConfig": {"NetworkMode": "container:def456"},
    "NetworkSettings": {"IPAddress": "172.17.0.2", "GlobalIPv6Address": "fd00::2",
                        "SandboxKey": "/var/run/docker/netns/1a2b", "Networks": {}},
    "Mounts": [{"Type": "bind", "Source": "/host", "Destination": "/data", "Mode": "ro", "RW": false,
                "Propagation": "rprivate"},
               {"Type": "volume", "Source": "/var/lib/docker/volumes/x", "Destination": "/x"}]})");
  const ContainerInspect c = ParseContainerInspect(j);
  EXPECT_EQ(c.id, "abc123");
  EXPECT_EQ(c.name, "/web");
  EXPECT_EQ(c.created, "2023-11-14T22:13:20Z");
  EXPECT_EQ(c.image, "sha256:iii");
  EXPECT_EQ(c.log_path, "/var/lib/docker/containers/abc123/abc123-json.log");
  EXPECT_EQ(c.state.status, "exited");
  EXPECT_FALSE(c.state.running);
  EXPECT_TRUE(c.state.oom_killed);
  EXPECT_EQ(c.state.exit_code, 137);
  EXPECT_EQ(c.state.started_at, "2023-11-14T22:13:21Z");
  EXPECT_EQ(c.state.finished_at, "2023-11-14T22:14:00Z");
  EXPECT_EQ(c.config_image, "nginx:1.25");
  EXPECT_EQ(c.hostname, "web-0");
  EXPECT_THAT(c.labels, ElementsAre(Pair("k", "v")));
  EXPECT_THAT(c.env, ElementsAre("A=1"));
  EXPECT_EQ(c.network_mode, "container:def456");
  EXPECT_EQ(c.ip_address, "172.17.0.2");
  EXPECT_EQ(c.ipv6_address, "fd00::2");
  EXPECT_EQ(c.sandbox_key, "/var/run/docker/netns/1a2b");
  ASSERT_EQ(c.mounts.size(), 2u);
  EXPECT_EQ(c.mounts[0].type, "bind");
  EXPECT_EQ(c.mounts[0].source, "/host");
  EXPECT_EQ(c.mounts[0].destination, "/data");
  EXPECT_EQ(c.mounts[0].mode, "ro");
  EXPECT_FALSE(c.mounts[0].rw);
  EXPECT_EQ(c.mounts[0].propagation, "rprivate");
  EXPECT_TRUE(c.mounts[1].rw);  // absent RW keeps the default
  EXPECT_EQ(c.raw, j);
}

// Trimmed from `docker inspect` on Docker 20.10.24 (API 1.41) for a container that
// cri-dockerd created for kubelet.
TEST(DockerTypesTest, ParseKubernetesContainerInspect) {
  const json j = json::parse(R"js({
    "Id": "5f1c3b1fb2a6c0b1e7c4b8f1d3f2a1c0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4",
    "Created": "2024-01-02T03:04:05.123456789Z",
    "Path": "/docker-entrypoint.sh", "Args": ["nginx", "-g", "daemon off;"],
    "State": {"Status": "running", "Running": true, "Paused": false, "Restarting": false, "OOMKilled": false,
              "Dead": false, "Pid": 31337, "ExitCode": 0, "Error": "",
              "StartedAt": "2024-01-02T03:04:06.987654321Z", "FinishedAt": "0001-01-01T00:00:00Z"},
    "Image": "sha256:605c77e624ddb75e6110f997c58876baa13f8754486b461117934b24a9dc3a85",
    "ResolvConfPath": "/var/lib/docker/containers/a1b2/resolv.conf",
    "LogPath": "/var/lib/docker/containers/5f1c/5f1c-json.log",
    "Name": "/k8s_nginx_web-0_default_0b7e1f5c-8d7a-4c1e-9f3b-2a6d4e8c1b0f_1",
    "RestartCount": 0, "Driver": "overlay2", "Platform": "linux",
    "GraphDriver": {"Name": "overlay2",
                    "Data": {"LowerDir": "/var/lib/docker/overlay2/9f1c-init/diff:/var/lib/docker/overlay2/77aa/diff",
                             "MergedDir": "/var/lib/docker/overlay2/9f1c/merged",
                             "UpperDir": "/var/lib/docker/overlay2/9f1c/diff",
                             "WorkDir": "/var/lib/docker/overlay2/9f1c/work"}},
    "HostConfig": {"Binds": ["/var/lib/kubelet/pods/0b7e/volumes/kubernetes.io~projected/kube-api-access:/var/run/secrets/kubernetes.io/serviceaccount:ro"],
                   "NetworkMode": "container:a1b2", "RestartPolicy": {"Name": "no", "MaximumRetryCount": 0},
                   "IpcMode": "container:a1b2", "PidMode": "", "OomScoreAdj": 1000, "Privileged": false,
                   "Runtime": "runc", "CpuShares": 102, "Memory": 134217728, "NanoCpus": 0,
                   "CgroupParent": "kubepods-burstable-pod0b7e.slice", "CpuPeriod": 100000, "CpuQuota": 50000,
                   "CpusetCpus": "0-1", "CpusetMems": "0", "MemoryReservation": 0, "MemorySwap": 134217728,
                   "PidsLimit": null, "Ulimits": null},
    "Mounts": [{"Type": "bind", "Source": "/var/lib/kubelet/pods/0b7e/volumes/kubernetes.io~projected/kube-api-access",
                "Destination": "/var/run/secrets/kubernetes.io/serviceaccount", "Mode": "ro", "RW": false,
                "Propagation": "rprivate"}],
    "Config": {"Hostname": "web-0", "User": "101:101", "Tty": false, "OpenStdin": false,
               "Env": ["KUBERNETES_PORT=tcp://10.96.0.1:443", "NGINX_VERSION=1.21.5"],
               "Cmd": ["nginx", "-g", "daemon off;"],
               "Image": "sha256:605c77e624ddb75e6110f997c58876baa13f8754486b461117934b24a9dc3a85",
               "Volumes": null, "WorkingDir": "", "Entrypoint": ["/docker-entrypoint.sh"],
               "Labels": {"io.kubernetes.container.name": "nginx", "io.kubernetes.docker.type": "container",
                          "io.kubernetes.sandbox.id": "a1b2"},
               "StopSignal": "SIGQUIT"},
    "NetworkSettings": {"Bridge": "", "SandboxKey": "", "IPAddress": "", "Networks": {}}})js");
  const ContainerInspect c = ParseContainerInspect(j);
  EXPECT_EQ(c.name, "/k8s_nginx_web-0_default_0b7e1f5c-8d7a-4c1e-9f3b-2a6d4e8c1b0f_1");
  EXPECT_EQ(c.created, "2024-01-02T03:04:05.123456789Z");
  EXPECT_EQ(c.state.status, "running");
  EXPECT_EQ(c.state.pid, 31337);
  EXPECT_EQ(c.state.started_at, "2024-01-02T03:04:06.987654321Z");
  EXPECT_EQ(c.state.finished_at, "0001-01-01T00:00:00Z");
  EXPECT_EQ(c.user, "101:101");
  EXPECT_EQ(c.stop_signal, "SIGQUIT");
  EXPECT_FALSE(c.tty);
  EXPECT_EQ(c.resources.cpu_period, 100000);
  EXPECT_EQ(c.resources.cpu_quota, 50000);
  EXPECT_EQ(c.resources.cpu_shares, 102);
  EXPECT_EQ(c.resources.cpuset_cpus, "0-1");
  EXPECT_EQ(c.resources.cpuset_mems, "0");
  EXPECT_EQ(c.resources.memory, 134217728);
  EXPECT_EQ(c.resources.memory_swap, 134217728);
  EXPECT_EQ(c.resources.oom_score_adj, 1000);
  EXPECT_EQ(c.runtime, "runc");
  EXPECT_EQ(c.pid_mode, "");
  EXPECT_EQ(c.ipc_mode, "container:a1b2");
  EXPECT_EQ(c.network_mode, "container:a1b2");
  EXPECT_EQ(c.cgroup_parent, "kubepods-burstable-pod0b7e.slice");
  EXPECT_EQ(c.upper_dir, "/var/lib/docker/overlay2/9f1c/diff");
  ASSERT_EQ(c.mounts.size(), 1u);
  EXPECT_EQ(c.mounts[0].destination, "/var/run/secrets/kubernetes.io/serviceaccount");
  EXPECT_FALSE(c.mounts[0].rw);
}

TEST(DockerTypesTest, ContainerTtyHostModesAndUnlimitedSwap) {
  const ContainerInspect c = ParseContainerInspect(json::parse(R"({
    "Config": {"Tty": true, "User": "nginx", "StopSignal": "15"},
    "HostConfig": {"PidMode": "host", "IpcMode": "host", "MemorySwap": -1, "OomScoreAdj": -997}})"));
  EXPECT_TRUE(c.tty);
  EXPECT_EQ(c.user, "nginx");
  EXPECT_EQ(c.stop_signal, "15");
  EXPECT_EQ(c.pid_mode, "host");
  EXPECT_EQ(c.ipc_mode, "host");
  EXPECT_EQ(c.resources.memory_swap, -1);
  EXPECT_EQ(c.resources.oom_score_adj, -997);
  EXPECT_EQ(c.resources.memory, 0);
  EXPECT_EQ(c.cgroup_parent, "");  // Docker's default
  EXPECT_EQ(c.upper_dir, "");      // no GraphDriver (a storage driver without an upper dir)
  EXPECT_EQ(c.runtime, "");
}

TEST(DockerTypesTest, ContainerAddressFallsBackToFirstNetworkWithOne) {
  const ContainerInspect c = ParseContainerInspect(json::parse(R"({"NetworkSettings": {
    "IPAddress": "", "Networks": {"a-none": {"IPAddress": ""},
                                  "bridge2": {"IPAddress": "10.0.0.5", "GlobalIPv6Address": "fd00::5"}}}})"));
  EXPECT_EQ(c.ip_address, "10.0.0.5");
  EXPECT_EQ(c.ipv6_address, "fd00::5");
}

TEST(DockerTypesTest, ContainerInspectOfApi152AndLater) {
  // Docker 29.7.2 at API 1.55: NetworkSettings without the top-level addresses (only
  // per network), Storage instead of GraphDriver on the containerd store.
  const ContainerInspect c = ParseContainerInspect(json::parse(R"({"Id": "3736",
    "NetworkSettings": {"SandboxID": "2022", "SandboxKey": "/run/docker/netns/2022d8719f5a", "Ports": {},
      "Networks": {"bridge": {"NetworkID": "e1aa", "EndpointID": "e778", "Gateway": "172.31.29.1",
                              "IPAddress": "172.31.29.2", "MacAddress": "da:c6:6d:de:a3:67", "IPPrefixLen": 24,
                              "IPv6Gateway": "", "GlobalIPv6Address": "", "GlobalIPv6PrefixLen": 0}}},
    "Storage": {"RootFS": {"Snapshot": {"Name": "overlayfs"}}}})"));
  EXPECT_EQ(c.ip_address, "172.31.29.2");
  EXPECT_EQ(c.ipv6_address, "");
  EXPECT_EQ(c.sandbox_key, "/run/docker/netns/2022d8719f5a");
  EXPECT_EQ(c.storage_driver, "overlayfs");
  EXPECT_EQ(c.upper_dir, "");
  // Before 1.52 the containerd store named its snapshotter in GraphDriver, without Data.
  const ContainerInspect old = ParseContainerInspect(json::parse(R"({
    "GraphDriver": {"Data": null, "Name": "overlayfs"}})"));
  EXPECT_EQ(old.storage_driver, "overlayfs");
  EXPECT_EQ(old.upper_dir, "");
  // And a graph driver its directories.
  const ContainerInspect graph = ParseContainerInspect(json::parse(R"({"GraphDriver": {"Name": "overlay2",
    "Data": {"UpperDir": "/var/lib/docker/overlay2/abc/diff", "LowerDir": "/var/lib/docker/overlay2/abc-init/diff"}}})"));
  EXPECT_EQ(graph.storage_driver, "overlay2");
  EXPECT_EQ(graph.upper_dir, "/var/lib/docker/overlay2/abc/diff");
}

TEST(DockerTypesTest, RunningContainerState) {
  const ContainerInspect c = ParseContainerInspect(json::parse(R"({"State": {
    "Status": "running", "Running": true, "Paused": true, "Restarting": true, "Dead": true, "Pid": 4242,
    "Error": "oops"}})"));
  EXPECT_TRUE(c.state.running);
  EXPECT_TRUE(c.state.paused);
  EXPECT_TRUE(c.state.restarting);
  EXPECT_TRUE(c.state.dead);
  EXPECT_EQ(c.state.pid, 4242);
  EXPECT_EQ(c.state.error, "oops");
}

// Absent, null and mistyped fields keep their defaults; nothing throws.
class LenientParseTest : public ::testing::TestWithParam<const char*> {};

TEST_P(LenientParseTest, KeepsDefaults) {
  const json j = json::parse(GetParam());
  const ContainerInspect c = ParseContainerInspect(j);
  EXPECT_EQ(c.id, "");
  EXPECT_EQ(c.state.pid, 0);
  EXPECT_FALSE(c.state.running);
  EXPECT_TRUE(c.labels.empty());
  EXPECT_TRUE(c.mounts.empty());
  EXPECT_EQ(c.ip_address, "");
  EXPECT_FALSE(c.tty);
  EXPECT_EQ(c.user, "");
  EXPECT_EQ(c.resources.cpu_shares, 0);
  EXPECT_EQ(c.resources.cpuset_cpus, "");
  EXPECT_EQ(c.runtime, "");
  EXPECT_EQ(c.raw, j);
  const ImageInspect i = ParseImageInspect(j);
  EXPECT_EQ(i.size, 0);
  EXPECT_TRUE(i.repo_tags.empty());
  EXPECT_TRUE(i.config.env.empty());
  const ContainerSummary s = ParseContainerSummary(j);
  EXPECT_TRUE(s.names.empty());
  EXPECT_EQ(s.created, 0);
  const ImageSummary is = ParseImageSummary(j);
  EXPECT_TRUE(is.labels.empty());
  const SystemInfo info = ParseInfo(j);
  EXPECT_TRUE(info.runtimes.empty());
  EXPECT_EQ(ParseVersion(j).api_version, "");
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, LenientParseTest,
    ::testing::Values(
        "{}", "null", "[]", "\"text\"", "42",
        R"({"Id": null, "State": null, "Config": null, "HostConfig": null, "NetworkSettings": null,
            "Mounts": null, "Labels": null, "Names": null, "RepoTags": null, "Runtimes": null})",
        R"({"Id": 7, "State": {"Pid": "12", "Running": "yes"},
            "Config": {"Labels": {"a": 1}, "Env": [1, 2], "Tty": 1, "User": 0},
            "HostConfig": {"CpuShares": "2", "CpusetCpus": 3, "Runtime": []},
            "NetworkSettings": {"Networks": [1]}, "Mounts": {"a": 1}, "Size": "big", "Created": {},
            "Names": 5, "RepoTags": [null], "Runtimes": ["runc"], "ApiVersion": 1.41})"));

TEST(DockerTypesTest, FloatSizesAreAccepted) {
  EXPECT_EQ(ParseImageSummary(json::parse(R"({"Size": 12.0, "Created": 1.7e9})")).size, 12);
}

}  // namespace
}  // namespace dockerclient
