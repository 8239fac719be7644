#pragma once
// cri-dockerd's command line (its flags at Mirantis/cri-dockerd master: config/options.go,
// cmd/cri/options/options.go, cmd/server.go; pflag's syntax) mapped to dockershim's
// configuration keys. docs/migrating-from-cri-dockerd.md has the same table for people.
#include <string>
#include <utility>
#include <vector>

namespace shim::migrate {

inline constexpr char kCriDockerdDefaultEndpoint[] = "unix:///var/run/cri-dockerd.sock";
inline constexpr char kCriDockerdDefaultRoot[] = "/var/lib/cri-dockerd";
inline constexpr char kDefaultDockerEndpoint[] = "unix:///var/run/docker.sock";

struct Refusal {
  std::string flag;    // as written, "--pod-cidr=10.0.0.0/16"
  std::string reason;  // why dockershim has no equivalent, and what to do instead
};

struct CriDockerdFlags {
  // dockershim configuration keys and their values, in the order of cri-dockerd's flags.
  // Each key is the name of the cri-dockerd flag it came from.
  std::vector<std::pair<std::string, std::string>> config;
  // cri-dockerd's effective settings: given, or its defaults.
  std::string runtime_endpoint = kCriDockerdDefaultEndpoint;  // unix://, a path, or fd://
  std::string docker_endpoint = kDefaultDockerEndpoint;
  std::string root_directory = kCriDockerdDefaultRoot;
  std::vector<Refusal> refused;
  std::vector<std::string> notes;  // settings left to dockershim's defaults, and why
};

// `args`: cri-dockerd's argv after the program. Every flag without an equivalent (and
// anything cri-dockerd itself would not start with) is in `refused`.
CriDockerdFlags MapCriDockerdFlags(const std::vector<std::string>& args);

// Whether cri-dockerd has a flag of this name ("network-plugin").
bool IsCriDockerdFlag(const std::string& name);

// The unix socket path of a CRI endpoint ("unix:///run/x.sock" or "/run/x.sock"); ""
// for fd:// and for anything else.
std::string UnixSocketPath(const std::string& endpoint);

}  // namespace shim::migrate
