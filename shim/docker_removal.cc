#include "shim/docker_removal.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "common/log.h"
#include "dockerclient/errors.h"

namespace shim {

absl::Status RemoveDockerContainer(dockerclient::DockerClient& docker, const common::Context& ctx,
                                   const std::string& id) {
  absl::Status removed = docker.RemoveContainer(ctx, id, /*force=*/true);
  if (!dockerclient::IsRemovalInProgress(removed)) return removed;
  LOG_DEBUG << "container " << id << " is being removed by another call: waiting for it to be gone";
  // A removal takes Docker seconds at most; a minute bounds a caller without a deadline.
  const common::Context bounded = ctx.Bounded(absl::Minutes(1));
  for (absl::Duration wait = absl::Milliseconds(20); !bounded.Expired() && !bounded.Cancelled();
       wait = std::min(wait * 2, absl::Seconds(1))) {
    absl::StatusOr<dockerclient::ContainerInspect> still = docker.InspectContainer(bounded, id);
    if (absl::IsNotFound(still.status())) return absl::OkStatus();
    if (!still.ok()) return still.status();
    absl::SleepFor(std::min(wait, bounded.deadline - absl::Now()));
  }
  return removed;
}

}  // namespace shim
