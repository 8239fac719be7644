#pragma once
// What the Docker Engine behind the shim can express, from its negotiated API version and
// /info: the one table that gates version-dependent CRI features.
#include <string>
#include <string_view>

#include "dockerclient/types.h"

namespace shim {

struct EngineFeatures {
  std::string api_version;           // negotiated, "1.41"
  std::string engine_version;        // /info ServerVersion, "20.10.24"; for messages
  bool annotations = false;          // HostConfig.Annotations, given to the runtime (API 1.43+, Docker 24)
  bool recursive_read_only = false;  // BindOptions.ReadOnlyForceRecursive (API 1.44+, Docker 25)
  bool image_mounts = false;         // Mount.Type "image" (API 1.48+, Docker 28)
  bool cdi = false;                  // CDI device requests: API 1.44+ and CDI spec dirs in /info
};

// `api_version` is the negotiated version (DockerClient::Ping); `info` the daemon's /info.
EngineFeatures FeaturesFor(std::string_view api_version, const dockerclient::SystemInfo& info);

// Whether Docker makes rro mounts with runtime `name` ("": the default runtime). It
// refuses them at start unless the runtime's OCI features, which /info gives under
// Runtimes.<name>.status (Docker 25+), list the "rro" mount option (runsc gives none).
bool RuntimeSupportsRro(const dockerclient::SystemInfo& info, std::string_view name);

// "Docker Engine 20.10.24 (API 1.41)", naming the engine in error messages.
std::string EngineName(const EngineFeatures& features);

}  // namespace shim
