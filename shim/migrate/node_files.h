#pragma once
// The files a switch from cri-dockerd writes: dockershim's configuration with
// cri-dockerd's settings, and the drop-in that has dockershim.socket listen where
// cri-docker.socket did.
#include <string>

#include "absl/status/statusor.h"
#include "shim/migrate/cri_dockerd_flags.h"
#include "shim/migrate/installation.h"

namespace shim::migrate {

inline constexpr char kDockershimRoot[] = "/var/lib/dockershim";

// /etc/dockershim/config.toml: dockershim's root directory and cri-dockerd's (read for
// its pods), cri-dockerd's mapped flags, then the lines of `previous` (the file there
// now) that set keys cri-dockerd has no flag for, as they were. Rendering its own
// output again gives the same text. INVALID_ARGUMENT for a value no TOML string can hold
// as the config reader takes it (both quote characters, a line break).
absl::StatusOr<std::string> RenderConfig(const CriDockerdUnits& cri_dockerd, const std::string& previous);

// [Socket] ListenStream= reset to `path`, with cri-dockerd's socket's access settings when
// it was socket-activated.
std::string RenderSocketDropIn(const CriDockerdUnits& cri_dockerd);

}  // namespace shim::migrate
