// Container logs in the CRI format at the CRI log path (log_directory + log_path):
// CreateContainer makes the file, StartContainer has the log copier (shim/logs/)
// fill it from Docker's log stream, ReopenContainerLog moves the copy to a new file
// after the kubelet rotated the old one, and a restarted shim resumes every copy. A
// container that Docker starts without a StartContainer (one the shim found created)
// gets its copy from Docker's start event.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "shim/cri_service.h"
#include "shim/events/cri_event.h"
#include "shim/logs/log_copier.h"
#include "shim/naming.h"

namespace shim {

namespace fs = std::filesystem;

absl::StatusOr<std::string> CriLogPath(const std::string& log_directory, const std::string& log_path) {
  if (log_directory.empty() || log_path.empty()) return std::string();
  // The shim creates this file as root: it must stay inside the pod's log directory.
  if (!fs::path(log_directory).is_absolute()) {
    return absl::InvalidArgumentError(
        absl::StrCat("log_directory \"", log_directory, "\" must be an absolute path"));
  }
  const fs::path relative = fs::path(log_path).lexically_normal();
  if (relative.is_absolute() || relative.empty() || *relative.begin() == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("log_path \"", log_path, "\" must be a relative path inside the pod's log directory"));
  }
  return (fs::path(log_directory) / log_path).string();
}

absl::Status CreateCriLogFile(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  // A link left by an older shim (or cri-dockerd) pointed at Docker's json log.
  if (fs::is_symlink(fs::symlink_status(path, ec))) fs::remove(path, ec);
  common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
  if (!fd) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the container log ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

namespace {

// A created container's copy starts with it; one that exited still has output to copy,
// unless the kubelet removed its file meanwhile (nothing recreates it then).
bool HasOutputToCopy(const std::string& state, const std::string& path) {
  return !path.empty() && state != "created" && (state == "running" || fs::exists(path));
}

}  // namespace

void CriService::CopyContainerLog(const dockerclient::ContainerInspect& container) {
  const std::string path = LabelValue(container.labels, kContainerLogPathLabel);
  if (!options_.log_copier || path.empty()) return;
  if (absl::Status created = CreateCriLogFile(path); !created.ok()) {
    LOG_WARN << "container " << container.id << ": " << created.message();
    return;
  }
  // json-file: Docker's own file is read directly (the shim runs as root beside dockerd).
  const std::string json_log = container.log_driver == "json-file"
                                   ? options_.log_copier->DockerJsonLogPath(container.id, container.log_path)
                                   : std::string();
  options_.log_copier->Follow(container.id, path, container.tty, json_log);
}

void CriService::ResumeLogCopies(const common::Context& ctx) {
  if (!options_.log_copier) return;
  dockerclient::ListContainersOptions list;
  list.label_filter[kContainerTypeLabel] = kContainerTypeContainer;
  absl::StatusOr<std::vector<dockerclient::ContainerSummary>> containers = docker_.ListContainers(ctx, list);
  if (!containers.ok()) {
    LOG_WARN << "cannot resume container log copies: " << containers.status().message();
    return;
  }
  int resumed = 0;
  for (const dockerclient::ContainerSummary& summary : *containers) {
    // A created one's copy starts with StartContainer or with Docker's start event.
    if (!HasOutputToCopy(summary.state, LabelValue(summary.labels, kContainerLogPathLabel))) continue;
    absl::StatusOr<dockerclient::ContainerInspect> container = docker_.InspectContainer(ctx, summary.id);
    if (!container.ok()) continue;
    CopyContainerLog(*container);
    ++resumed;
  }
  if (resumed > 0) LOG_INFO << "resumed the log copies of " << resumed << " containers";
}

void CriService::OnContainerEvent(const events::CriEvent& event) {
  // The event carries the container's labels: no log path, nothing to read.
  if (!options_.log_copier || event.is_sandbox || event.type != v1::CONTAINER_STARTED_EVENT ||
      LabelValue(event.attributes, kContainerLogPathLabel).empty()) {
    return;
  }
  // The view's inspect, read for this very event, when it is live. Copying a container
  // already copied (the usual case: StartContainer did) is a no-op.
  absl::StatusOr<dockerclient::ContainerInspect> container =
      Inspect(common::Context::WithTimeout(absl::Seconds(30)), event.container_id, Reading::kForStatus);
  if (container.ok() &&
      HasOutputToCopy(container->state.status, LabelValue(container->labels, kContainerLogPathLabel))) {
    CopyContainerLog(*container);
  }
}

absl::StatusOr<v1::ReopenContainerLogResponse> CriService::ReopenContainerLog(
    const common::Context& ctx, const v1::ReopenContainerLogRequest& req) {
  if (req.container_id().empty()) return absl::InvalidArgumentError("ReopenContainerLog: container_id is required");
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect container, InspectCriContainer(ctx, req.container_id()));
  // As containerd: only a running container writes a log that can move to a new file.
  if (!container.state.running) {
    return absl::FailedPreconditionError(
        absl::StrCat("ReopenContainerLog: container ", req.container_id(), " is not running"));
  }
  if (!options_.log_copier) return absl::FailedPreconditionError("ReopenContainerLog: the log copier is disabled");
  if (LabelValue(container.labels, kContainerLogPathLabel).empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("ReopenContainerLog: container ", req.container_id(), " has no log path"));
  }
  absl::Status reopened = options_.log_copier->Reopen(container.id);
  // Not copied (yet): start the copy, which opens the file at the path anew.
  if (absl::IsNotFound(reopened)) {
    CopyContainerLog(container);
    return v1::ReopenContainerLogResponse();
  }
  RETURN_IF_ERROR(common::Annotate(reopened, "ReopenContainerLog"));
  return v1::ReopenContainerLogResponse();
}

}  // namespace shim
