#pragma once
// Removing a container Docker is already removing. The kubelet removes a dead container
// twice at once now and then (its garbage collector and its pod worker); Docker refuses
// the second call (409, "removal of container ... is already in progress"). The CRI's
// removal is idempotent, so the second call waits for the first to finish instead.
#include <string>

#include "absl/status/status.h"
#include "common/context.h"
#include "dockerclient/docker_client.h"

namespace shim {

// Docker's forced removal of `id`; when another removal of it is under way, waits (until
// `ctx`'s deadline) for the container to be gone and answers OK. NOT_FOUND as Docker says it.
absl::Status RemoveDockerContainer(dockerclient::DockerClient& docker, const common::Context& ctx,
                                   const std::string& id);

}  // namespace shim
