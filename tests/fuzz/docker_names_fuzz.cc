// Docker container names as the shim reads them back into pod and container metadata
// (any Docker user can name a container "k8s_..."), on arbitrary bytes.
// - A name that parses is rebuilt by MakeSandboxName / MakeContainerName into one that
//   parses to the same metadata (the random 7th part cri-dockerd adds aside); no name
//   is both a sandbox's and a container's; CheckNameParts accepts or refuses
//   (INVALID_ARGUMENT) any parsed metadata.
// - Anything refused is INVALID_ARGUMENT.
#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "shim/naming.h"

namespace {

using google::protobuf::util::MessageDifferencer;

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string name(reinterpret_cast<const char*>(data), size);
  const auto sandbox = shim::ParseSandboxName(name);
  if (sandbox.ok()) {
    const auto again = shim::ParseSandboxName(shim::MakeSandboxName(*sandbox));
    Check(again.ok() && MessageDifferencer::Equals(*again, *sandbox));
    const absl::Status safe = shim::CheckNameParts(*sandbox, nullptr);
    Check(safe.ok() || safe.code() == absl::StatusCode::kInvalidArgument);
  } else {
    Check(sandbox.status().code() == absl::StatusCode::kInvalidArgument);
  }
  const auto container = shim::ParseContainerName(name);
  if (container.ok()) {
    Check(!sandbox.ok());
    const auto again = shim::ParseContainerName(shim::MakeContainerName(container->sandbox, container->container));
    Check(again.ok() && MessageDifferencer::Equals(again->sandbox, container->sandbox) &&
          MessageDifferencer::Equals(again->container, container->container));
    const absl::Status safe = shim::CheckNameParts(container->sandbox, &container->container);
    Check(safe.ok() || safe.code() == absl::StatusCode::kInvalidArgument);
  } else {
    Check(container.status().code() == absl::StatusCode::kInvalidArgument);
  }
  return 0;
}
