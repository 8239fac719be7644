#pragma once
// `dockershim migrate from-cri-dockerd|to-cri-dockerd [--dry-run]`: main.cc hands the
// command line over when its first argument is "migrate", before the daemon's flags.

namespace shim::migrate {

// argv[0] is "migrate". Returns the exit code (2 for a bad command line).
int MigrateCommand(int argc, char** argv);

}  // namespace shim::migrate
