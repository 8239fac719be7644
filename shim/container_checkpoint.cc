// CheckpointContainer: Docker's checkpoint API (CRIU through containerd and runc) into
// a temporary directory beside `location`, packed as the tar the kubelet asked for:
//   checkpoint/   CRIU's images, as Docker wrote them
//   config.dump   the container's identity (CRI-O's config.dump field names)
// The archive appears at `location` only once complete (written as <location>.tmp,
// renamed over any file there); a failure leaves neither it nor the CRIU directory behind. Changes to the
// container's root filesystem are not included (Docker's checkpoint does not take them).
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/checkpointing/tar_writer.h"
#include "shim/cri_service.h"
#include "shim/naming.h"

namespace shim {

namespace {

// Used when the request sets no timeout (the kubelet always sets one).
constexpr absl::Duration kDefaultCheckpointTimeout = absl::Minutes(2);

absl::Status CheckLocation(const std::string& location) {
  if (location.empty()) return absl::InvalidArgumentError("CheckpointContainer: location is required");
  if (location.front() != '/')
    return absl::InvalidArgumentError(
        absl::StrCat("CheckpointContainer: location \"", location, "\" must be an absolute path"));
  struct stat st;
  if (::stat(location.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return absl::InvalidArgumentError(absl::StrCat("CheckpointContainer: location ", location, " is a directory"));
  const std::string dir = std::filesystem::path(location).parent_path().string();
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return absl::InvalidArgumentError(
        absl::StrCat("CheckpointContainer: the directory of location ", location, " does not exist"));
  if (::access(dir.c_str(), W_OK) != 0)
    return absl::InvalidArgumentError(absl::StrCat("CheckpointContainer: cannot write to ", dir, ": ",
                                                   std::strerror(errno)));
  return absl::OkStatus();
}

// Docker finds criu in its own PATH; on a node that is the usual system PATH.
bool CriuInstalled() {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path && *path ? path : "/usr/sbin:/usr/bin:/sbin:/bin", ':')) {
    if (dir.empty()) continue;
    const std::string candidate = absl::StrCat(dir, "/criu");
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<v1::CheckpointContainerResponse> CriService::CheckpointContainer(
    const common::Context& caller, const v1::CheckpointContainerRequest& req) {
  if (req.container_id().empty())
    return absl::InvalidArgumentError("CheckpointContainer: container_id is required");
  if (req.timeout() < 0)
    return absl::InvalidArgumentError(absl::StrCat("CheckpointContainer: timeout ", req.timeout(), " is negative"));
  RETURN_IF_ERROR(CheckLocation(req.location()));
  const common::Context ctx =
      caller.Bounded(req.timeout() > 0 ? absl::Seconds(req.timeout()) : kDefaultCheckpointTimeout);

  ASSIGN_OR_RETURN(dockerclient::ContainerInspect container, InspectCriContainer(ctx, req.container_id()));
  if (!container.state.running)
    return absl::FailedPreconditionError(absl::StrCat("CheckpointContainer: container ", container.id, " is ",
                                                      container.state.status, ", not running"));
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  if (!info->raw.is_object() || !info->raw.value("ExperimentalBuild", false))
    return absl::FailedPreconditionError(absl::StrCat(
        "CheckpointContainer needs Docker's experimental features, which are off on Docker ", info->server_version,
        ": set \"experimental\": true in /etc/docker/daemon.json and restart dockerd"));
  if (!CriuInstalled())
    return absl::FailedPreconditionError(
        "CheckpointContainer needs CRIU, and criu was not found in PATH: install it (Debian: apt-get install criu)");

  // Docker (root, on this host) writes the images into <work>/<checkpoint id>/.
  std::string work = absl::StrCat(req.location(), ".criu.XXXXXX");
  if (::mkdtemp(work.data()) == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("CheckpointContainer: cannot create a directory beside ",
                                                   req.location(), ": ", std::strerror(errno)));
  const std::string tmp = absl::StrCat(req.location(), ".tmp");
  absl::Cleanup cleanup = [&] {
    std::error_code ec;
    std::filesystem::remove_all(work, ec);
    ::unlink(tmp.c_str());
  };
  const std::string checkpoint_id = absl::StrCat("cri-", absl::ToUnixNanos(absl::Now()));
  dockerclient::CheckpointOptions options;
  options.checkpoint_id = checkpoint_id;
  options.checkpoint_dir = work;
  const absl::Time started = absl::Now();
  RETURN_IF_ERROR(docker_.CreateCheckpoint(ctx, container.id, options));  // names the container
  const absl::Time checkpointed = absl::Now();

  nlohmann::json config = {{"id", container.id},
                           {"name", LabelValue(container.labels, kContainerNameLabel)},
                           {"rootfsImage", container.config_image},
                           {"rootfsImageRef", container.image},
                           {"rootfsImageName", container.config_image},
                           {"runtime", container.runtime},
                           {"createdTime", container.created},
                           {"checkpointedTime", absl::FormatTime(absl::RFC3339_full, checkpointed, absl::UTCTimeZone())}};
  absl::StatusOr<checkpointing::TarWriter> tar = checkpointing::TarWriter::Create(tmp);
  if (!tar.ok()) return common::Annotate(tar.status(), "CheckpointContainer");
  absl::Status packed = tar->AddTree("checkpoint", absl::StrCat(work, "/", checkpoint_id));
  if (packed.ok()) packed = tar->AddFile("config.dump", config.dump(2) + "\n");
  if (packed.ok()) packed = tar->Finish();
  if (packed.ok() && ::rename(tmp.c_str(), req.location().c_str()) != 0)
    packed = absl::InternalError(absl::StrCat("rename to ", req.location(), ": ", std::strerror(errno)));
  if (!packed.ok()) return common::Annotate(packed, "CheckpointContainer: write the archive");
  LOG_INFO << "checkpointed container " << container.id << " to " << req.location() << " (CRIU took "
           << absl::FormatDuration(checkpointed - started) << ")";
  return v1::CheckpointContainerResponse();
}

}  // namespace shim
