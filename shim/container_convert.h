#pragma once
// Pure translations from Docker containers to CRI containers (ListContainers,
// ContainerStatus), compatible with cri-dockerd so kubelet sees the same values
// after a node switches shims.
#include <string>

#include "absl/status/statusor.h"
#include "api/cri.h"
#include "dockerclient/types.h"

namespace shim {

// Docker's machine-readable State ("created", "running", "paused", "restarting",
// "removing", "exited", "dead") as CRI state, for listed containers.
// Docker's RFC 3339 times (nanoseconds; "0001-01-01T00:00:00Z" for never) as Unix
// nanoseconds, 0 for never or unreadable.
int64_t DockerTimeToNanos(const std::string& text);

runtime::v1::ContainerState ToContainerState(const std::string& docker_state);

// A listed container (GET /containers/json). INVALID_ARGUMENT when its name is
// not a CRI container name.
absl::StatusOr<runtime::v1::Container> ToCriContainer(const dockerclient::ContainerSummary& c);

// The image reference shown as the pod's containerStatuses[].imageID, as
// cri-dockerd makes it: "docker-pullable://<repo>@sha256:..." from the image's
// first repo digest, else "docker://<image ID>".
std::string ToImageRef(const dockerclient::ImageInspect& image);

// An inspected container. `image_ref` is ToImageRef of its image; empty when the
// image is gone, which gives "docker://<image ID>". `image_tag` is the image's
// first repo tag (empty if none or unknown): kubelet creates containers from the
// image ID, and like cri-dockerd the status then names the image by that tag.
// INVALID_ARGUMENT when the name is not a CRI container name.
absl::StatusOr<runtime::v1::ContainerStatus> ToContainerStatus(const dockerclient::ContainerInspect& c,
                                                               const std::string& image_ref,
                                                               const std::string& image_tag = "");

// ContainerStatusResponse.info for verbose requests: {"info": {"sandboxID", "pid"}}
// as JSON, the keys cri-dockerd reports.
google::protobuf::Map<std::string, std::string> ContainerVerboseInfo(const dockerclient::ContainerInspect& c);

}  // namespace shim
