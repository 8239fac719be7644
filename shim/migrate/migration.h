#pragma once
// The switch between cri-dockerd and dockershim on a live node, one step after another.
// Each step first looks whether it is done already (a unit stopped, a file that says the
// same), so that running the command again after an interruption finishes the job. What
// was served before the switch is kept in a state file until the check after it passes:
// a rerun compares with that, not with a half-switched node. Docker and the containers
// are never stopped.
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "shim/migrate/node_files.h"
#include "shim/migrate/system.h"
#include "shim/migrate/unit_file.h"

namespace shim::migrate {

enum class Direction {
  kFromCriDockerd,
  kToCriDockerd,
  // Only the hand-over of dockershim's checkpoints that kToCriDockerd does
  // (checkpoint_handover.h), for a switch made by hand: no unit, no check.
  kCheckpointsToCriDockerd,
};

struct Paths {
  std::vector<std::string> unit_dirs = DefaultUnitDirectories();
  std::string dropin = "/etc/systemd/system/dockershim.socket.d/50-cri-dockerd-socket.conf";
  std::string config = "/etc/dockershim/config.toml";
  std::string state = "/var/lib/dockershim/migrate-state.json";
  std::string dockershim_root = kDockershimRoot;  // its checkpoints (sandbox/<id>)
  // cri-dockerd's, for kCheckpointsToCriDockerd (a switch takes it from cri-dockerd's flags).
  std::string cri_dockerd_root = "/var/lib/cri-dockerd";
};

struct MigrateOptions {
  Direction direction = Direction::kFromCriDockerd;
  bool dry_run = false;  // say what would be done, change nothing
  // How long the check waits for the new runtime to answer with every pod.
  absl::Duration check_timeout = absl::Seconds(60);
  Paths paths;
};

// Runs the switch (or the dry run), saying what it does on `out` and why it stops on
// `err`. Returns the exit code: 0 when the check passed (or for a dry run), 1 when
// something was refused, failed, or the check found a difference.
int Migrate(const MigrateOptions& options, System& system, std::ostream& out, std::ostream& err);

}  // namespace shim::migrate
