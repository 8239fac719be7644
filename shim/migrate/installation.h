#pragma once
// What a node has of cri-dockerd and of dockershim as systemd services: their units,
// the command line systemd runs, and the CRI socket each serves.
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shim/migrate/cri_dockerd_flags.h"

namespace shim::migrate {

inline constexpr char kDockershimService[] = "dockershim.service";
inline constexpr char kDockershimSocket[] = "dockershim.socket";

// A socket unit's [Socket] settings that say who may connect.
struct SocketAccess {
  std::string mode = "0666";  // systemd's defaults
  std::string user = "root";
  std::string group = "root";
};

struct CriDockerdUnits {
  std::string service;           // "cri-docker.service" as packaged
  std::string socket;            // "cri-docker.socket"; empty when there is none
  std::vector<std::string> argv;  // ExecStart= as systemd runs it
  std::vector<std::string> files;  // the unit files and drop-ins read
  CriDockerdFlags flags;
  // The CRI socket it serves (its endpoint, or for fd:// its socket unit's one
  // ListenStream= path); empty when that is not one unix path, with `socket_problem` saying why.
  std::string socket_path;
  std::string socket_problem;
  bool socket_activated = false;  // fd://: `access` is the socket unit's
  SocketAccess access;
};

// cri-dockerd's units in `unit_dirs` (cri-docker.service, or cri-dockerd.service, with
// their socket). NOT_FOUND "cri-dockerd is not installed ..." when there is no service
// unit; other errors name the unit file.
absl::StatusOr<CriDockerdUnits> ReadCriDockerdUnits(const std::vector<std::string>& unit_dirs);

struct DockershimUnits {
  std::string socket_path;  // dockershim.socket's ListenStream= (drop-ins applied); empty: not one path,
  std::string socket_problem;  // and why
};

// NOT_FOUND naming the package when dockershim.service or dockershim.socket is missing.
absl::StatusOr<DockershimUnits> ReadDockershimUnits(const std::vector<std::string>& unit_dirs);

}  // namespace shim::migrate
