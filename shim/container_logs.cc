// Container logs in the CRI format at the CRI log path (log_directory + log_path):
// CreateContainer makes the file, StartContainer has the log copier (shim/logs/)
// fill it from Docker's log stream, ReopenContainerLog moves the copy to a new file
// after the kubelet rotated the old one, and a restarted shim resumes every copy.
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
    // A created container's copy starts with it; one that exited while the shim was
    // down still has output to copy.
    const std::string path = LabelValue(summary.labels, kContainerLogPathLabel);
    if (summary.state == "created" || path.empty() || (summary.state != "running" && !fs::exists(path))) continue;
    absl::StatusOr<dockerclient::ContainerInspect> container = docker_.InspectContainer(ctx, summary.id);
    if (!container.ok()) continue;
    CopyContainerLog(*container);
    ++resumed;
  }
  if (resumed > 0) LOG_INFO << "resumed the log copies of " << resumed << " containers";
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
