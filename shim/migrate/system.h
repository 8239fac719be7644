#pragma once
// What a switch does to the node, behind one interface so that its steps can be tested
// with a fake: systemd (unit states, systemctl), the files it writes, the CRI and Docker
// calls, the clock. Reading unit files and the configuration is plain file access
// (their directories are in migrate::Paths).
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shim/migrate/log_links.h"
#include "shim/migrate/snapshot.h"

namespace shim::migrate {

struct UnitStatus {
  bool enabled = false;      // UnitFileState enabled (or enabled-runtime)
  bool active = false;       // ActiveState active, activating or reloading
  bool need_reload = false;  // NeedDaemonReload: its files changed since systemd read them
  absl::Time active_since = absl::InfinitePast();  // ActiveEnterTimestamp
};

class System {
 public:
  virtual ~System() = default;

  virtual absl::StatusOr<UnitStatus> Unit(const std::string& unit) = 0;
  // `systemctl <verb> <units...>` (daemon-reload without units). A failure quotes
  // systemctl's own message and names the units.
  virtual absl::Status Systemctl(const std::string& verb, const std::vector<std::string>& units) = 0;

  virtual absl::Status WriteFile(const std::string& path, const std::string& content) = 0;  // atomically
  // Atomically, as cri-dockerd writes its checkpoints: mode 0600, through a temporary
  // file whose name starts with '.' (cri-dockerd's listing skips those).
  virtual absl::Status WriteCriDockerdFile(const std::string& path, const std::string& content) = 0;
  virtual absl::Status LinkFile(const std::string& existing, const std::string& link) = 0;  // a hard link
  virtual absl::Status RemoveFile(const std::string& path) = 0;  // gone already is fine
  virtual absl::Status Relink(const std::string& path, const std::string& target) = 0;  // see log_links.h
  // Reads a configuration (a config.toml's text) as dockershim does at its start;
  // INVALID_ARGUMENT with dockershim's message, naming the key, when it would not start.
  virtual absl::Status CheckConfig(const std::string& content) = 0;

  virtual absl::StatusOr<Snapshot> TakeSnapshot(const std::string& socket_path, absl::Duration timeout) = 0;
  virtual absl::StatusOr<std::vector<ContainerLog>> RunningContainerLogs(const std::string& docker_endpoint) = 0;

  virtual absl::Time Now() = 0;
  virtual void Sleep(absl::Duration d) = 0;
};

// `systemctl show --timestamp=us+utc -p UnitFileState -p ActiveState -p NeedDaemonReload
// -p ActiveEnterTimestamp` of one unit.
UnitStatus ParseSystemctlShow(const std::string& text);

// The node itself: systemctl, the files, CRI over the socket, Docker at its endpoint.
// `self` is this binary, run with --config to check a configuration.
std::unique_ptr<System> NodeSystem(const std::string& self);

}  // namespace shim::migrate
