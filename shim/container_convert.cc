#include "shim/container_convert.h"

// Compatibility notes (checked against Mirantis/cri-dockerd core/convert.go,
// core/container_status.go, core/container_list.go, core/naming.go):
//
// * Listed containers: cri-dockerd reads the state from the human Status text
//   ("Up ..." running or paused, "Exited ...", "Created"; anything else UNKNOWN).
//   Docker's State field says the same in machine form. image_ref is Docker's
//   raw image ID there: kubelet's image GC matches it against ListImages IDs.
// * Status: the state follows State.Running, so paused and restarting containers
//   are RUNNING. A stopped container with a finish time is EXITED ("OOMKilled",
//   "Completed" or "Error"); without one but with an exit code it failed to start
//   ("ContainerCannotRun", start and finish set to the creation time); otherwise
//   CREATED. message is State.Error for every stopped container. image_ref is
//   "docker-pullable://<repo digest>" or "docker://<image ID>".
// * Beyond cri-dockerd: unset times are 0 (cri-dockerd sends Go's zero time),
//   and mount propagation/SELinux relabel, resources, image_id and stop_signal
//   are filled from what Docker reports.
#include <cstdint>
#include <iterator>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "shim/image_convert.h"
#include "shim/image_ref.h"
#include "shim/naming.h"

namespace shim {

namespace v1 = ::runtime::v1;

int64_t DockerTimeToNanos(const std::string& text) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err) || t <= absl::UnixEpoch()) return 0;
  return absl::ToUnixNanos(t);
}

namespace {

constexpr char kDockerImageRefPrefix[] = "docker://";
constexpr char kDockerPullableImageRefPrefix[] = "docker-pullable://";

v1::MountPropagation ToPropagation(const std::string& propagation) {
  if (propagation == "rslave" || propagation == "slave") return v1::PROPAGATION_HOST_TO_CONTAINER;
  if (propagation == "rshared" || propagation == "shared") return v1::PROPAGATION_BIDIRECTIONAL;
  return v1::PROPAGATION_PRIVATE;  // "rprivate", "private", and "" (volumes)
}

// Binds written "src:dst:ro,Z" keep "ro,Z" as Mode; z/Z asks Docker to relabel.
bool HasSelinuxRelabel(const std::string& mode) {
  for (absl::string_view option : absl::StrSplit(mode, ','))
    if (option == "z" || option == "Z") return true;
  return false;
}

// Linux numbers 1-31, which is how Docker reads a numeric stop signal.
constexpr const char* kSignalNames[] = {"",     "HUP",  "INT",    "QUIT", "ILL",   "TRAP", "ABRT", "BUS",
                                        "FPE",  "KILL", "USR1",   "SEGV", "USR2",  "PIPE", "ALRM", "TERM",
                                        "STKFLT", "CHLD", "CONT", "STOP", "TSTP",  "TTIN", "TTOU", "URG",
                                        "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO",   "PWR",  "SYS"};
constexpr int kRtMin = 34, kRtMax = 64;  // as glibc and Docker number them

// Docker accepts "SIGTERM", "TERM", "15", "SIGRTMIN+3", "RTMAX-1"; CRI spells the
// real-time ones SIGRTMINPLUS3, SIGRTMAXMINUS1. Unknown gives RUNTIME_DEFAULT.
v1::Signal ToCriSignal(const std::string& docker_signal) {
  std::string name = absl::AsciiStrToUpper(docker_signal);
  if (absl::StartsWith(name, "SIG")) name.erase(0, 3);
  int number = 0;
  if (absl::SimpleAtoi(name, &number)) {
    if (number > 0 && number < static_cast<int>(std::size(kSignalNames))) {
      name = kSignalNames[number];
    } else if (number == kRtMin) {
      name = "RTMIN";
    } else if (number == kRtMax) {
      name = "RTMAX";
    } else if (number > kRtMin && number < kRtMax) {
      name = number - kRtMin <= 15 ? absl::StrCat("RTMIN+", number - kRtMin) : absl::StrCat("RTMAX-", kRtMax - number);
    } else {
      return v1::RUNTIME_DEFAULT;
    }
  }
  v1::Signal signal = v1::RUNTIME_DEFAULT;
  if (name.empty() ||
      !v1::Signal_Parse(absl::StrCat("SIG", absl::StrReplaceAll(name, {{"+", "PLUS"}, {"-", "MINUS"}})), &signal))
    return v1::RUNTIME_DEFAULT;
  return signal;
}

}  // namespace

v1::ContainerState ToContainerState(const std::string& docker_state) {
  if (docker_state == "running" || docker_state == "paused") return v1::CONTAINER_RUNNING;
  if (docker_state == "exited") return v1::CONTAINER_EXITED;
  if (docker_state == "created") return v1::CONTAINER_CREATED;
  return v1::CONTAINER_UNKNOWN;  // "restarting", "removing", "dead"
}

absl::StatusOr<v1::Container> ToCriContainer(const dockerclient::ContainerSummary& c) {
  if (c.names.empty()) return absl::InvalidArgumentError(absl::StrCat("container ", c.id, " has no name"));
  ASSIGN_OR_RETURN(ParsedContainerName parsed, ParseContainerName(c.names.front()));
  v1::Container out;
  out.set_id(c.id);
  out.set_pod_sandbox_id(LabelValue(c.labels, kSandboxIdLabel));
  *out.mutable_metadata() = std::move(parsed.container);
  out.mutable_image()->set_image(c.image);
  out.set_image_ref(c.image_id);
  out.set_image_id(c.image_id);
  out.set_state(ToContainerState(c.state));
  out.set_created_at(c.created * 1000000000LL);
  SplitLabels(c.labels, out.mutable_labels(), out.mutable_annotations());
  return out;
}

std::string ToImageRef(const dockerclient::ImageInspect& image) {
  std::vector<std::string> digests = RealReferences(image.repo_digests);
  if (!digests.empty()) return absl::StrCat(kDockerPullableImageRefPrefix, digests.front());
  return absl::StrCat(kDockerImageRefPrefix, image.id);
}

absl::StatusOr<v1::ContainerStatus> ToContainerStatus(const dockerclient::ContainerInspect& c,
                                                      const std::string& image_ref, const std::string& image_tag) {
  ASSIGN_OR_RETURN(ParsedContainerName parsed, ParseContainerName(c.name));
  v1::ContainerStatus out;
  out.set_id(c.id);
  *out.mutable_metadata() = std::move(parsed.container);

  const int64_t created = DockerTimeToNanos(c.created);
  int64_t started = DockerTimeToNanos(c.state.started_at);
  int64_t finished = DockerTimeToNanos(c.state.finished_at);
  if (c.state.running) {
    out.set_state(v1::CONTAINER_RUNNING);
  } else {
    if (finished != 0) {
      out.set_state(v1::CONTAINER_EXITED);
      // An application may handle the OOM kill and exit 0: OOMKilled goes first.
      out.set_reason(c.state.oom_killed ? "OOMKilled" : c.state.exit_code == 0 ? "Completed" : "Error");
    } else if (c.state.exit_code != 0 || !c.state.error.empty()) {
      // Docker sets an exit code (and the error) but no times when start fails;
      // kubelet needs a finish time to back off before the next attempt.
      out.set_state(v1::CONTAINER_EXITED);
      out.set_reason("ContainerCannotRun");
      started = finished = created;
    } else {
      out.set_state(v1::CONTAINER_CREATED);
    }
    out.set_message(c.state.error);
  }
  out.set_created_at(created);
  out.set_started_at(started);
  out.set_finished_at(finished);
  out.set_exit_code(c.state.exit_code);

  // cri-dockerd always names the image by its first tag; a container created
  // from a reference (crictl does that) keeps it, as another tag could mislead.
  const bool by_id = LooksLikeImageId(c.config_image);
  out.mutable_image()->set_image(by_id && !image_tag.empty() ? image_tag : c.config_image);
  out.set_image_ref(image_ref.empty() ? absl::StrCat(kDockerImageRefPrefix, c.image) : image_ref);
  out.set_image_id(c.image);
  SplitLabels(c.labels, out.mutable_labels(), out.mutable_annotations());
  out.set_log_path(LabelValue(c.labels, kContainerLogPathLabel));

  for (const dockerclient::MountPoint& m : c.mounts) {
    v1::Mount& mount = *out.add_mounts();
    mount.set_container_path(m.destination);
    mount.set_host_path(m.source);
    mount.set_readonly(!m.rw);
    mount.set_selinux_relabel(HasSelinuxRelabel(m.mode));
    mount.set_propagation(ToPropagation(m.propagation));
  }

  const dockerclient::ContainerResources& r = c.resources;
  v1::LinuxContainerResources& limits = *out.mutable_resources()->mutable_linux();
  limits.set_cpu_period(r.cpu_period);
  limits.set_cpu_quota(r.cpu_quota);
  limits.set_cpu_shares(r.cpu_shares);
  limits.set_memory_limit_in_bytes(r.memory);
  // Docker's -1 (unlimited swap) has no CRI spelling but "not set".
  limits.set_memory_swap_limit_in_bytes(r.memory_swap > 0 ? r.memory_swap : 0);
  limits.set_oom_score_adj(r.oom_score_adj);
  limits.set_cpuset_cpus(r.cpuset_cpus);
  limits.set_cpuset_mems(r.cpuset_mems);

  out.set_stop_signal(ToCriSignal(c.stop_signal));
  // `user` stays unset, as with cri-dockerd: the process's gid and supplemental
  // groups come from the image's /etc/passwd and /etc/group, which Docker does
  // not report.
  return out;
}

google::protobuf::Map<std::string, std::string> ContainerVerboseInfo(const dockerclient::ContainerInspect& c) {
  const nlohmann::json info = {{"sandboxID", LabelValue(c.labels, kSandboxIdLabel)}, {"pid", c.state.pid}};
  google::protobuf::Map<std::string, std::string> out;
  out["info"] = info.dump();
  return out;
}

}  // namespace shim
