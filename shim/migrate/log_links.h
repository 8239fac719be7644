#pragma once
// Container logs as cri-dockerd keeps them: a symlink at the CRI log path (the label
// io.kubernetes.container.logpath) to Docker's json-file log (inspect's LogPath), made
// when it starts a container. dockershim replaces that link with a CRI file of its own
// (shim/logs/); switching back puts the links of running containers back, since
// cri-dockerd would not make them before the container's next start.
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "dockerclient/docker_client.h"

namespace shim::migrate {

struct ContainerLog {
  std::string id;
  std::string name;        // Docker's, without the leading '/'
  std::string cri_path;    // where the kubelet reads the container's log
  std::string log_driver;  // "json-file", "local", "journald", ...
  std::string docker_log;  // Docker's LogPath; empty for drivers other than json-file
};

// The running CRI containers (io.kubernetes.docker.type=container) that have a CRI log path.
absl::StatusOr<std::vector<ContainerLog>> RunningContainerLogs(dockerclient::DockerClient& docker,
                                                               const common::Context& ctx);

enum class LinkState {
  kLinked,       // already a link to Docker's log
  kToLink,       // our CRI file (or nothing) is there: to be replaced by the link
  kNotLinkable,  // no json-file log to link to: left as it is
};

struct LinkPlan {
  ContainerLog container;
  LinkState state = LinkState::kToLink;
  std::string why;  // kNotLinkable: what is missing
};

// Looks at the files: what the CRI log path holds and whether Docker's log exists.
LinkPlan PlanLink(const ContainerLog& container);

// Makes `path` a symlink to `target` in one step for readers: a link at a temporary name
// beside it, renamed over whatever `path` was.
absl::Status Relink(const std::string& path, const std::string& target);

}  // namespace shim::migrate
