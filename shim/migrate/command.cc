#include "shim/migrate/command.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "common/log.h"
#include "common/unique_fd.h"
#include "shim/migrate/migration.h"

namespace shim::migrate {

int MigrateCommand(int argc, char** argv) {
  CLI::App app{"Switch this node's CRI runtime between cri-dockerd and dockershim, keeping its pods running "
               "(docs/migrating-from-cri-dockerd.md)",
               "dockershim migrate"};
  app.require_subcommand(1);
  MigrateOptions options;
  auto* from = app.add_subcommand("from-cri-dockerd",
                                  "stop cri-dockerd, start dockershim with its settings on its socket, check the pods");
  auto* to = app.add_subcommand("to-cri-dockerd",
                                "stop dockershim, give the containers' logs back to cri-dockerd, start it, check the pods");
  auto* checkpoints = app.add_subcommand(
      "checkpoints-to-cri-dockerd",
      "with dockershim stopped, hand its checkpoints over to cri-dockerd as to-cri-dockerd does: for a switch made "
      "by hand, without systemd");
  checkpoints->add_option("--root-directory", options.paths.dockershim_root, "dockershim's root directory")
      ->capture_default_str();
  checkpoints->add_option("--cri-dockerd-root-directory", options.paths.cri_dockerd_root,
                          "cri-dockerd's root directory")
      ->capture_default_str();
  for (CLI::App* sub : {from, to, checkpoints})
    sub->add_flag("--dry-run", options.dry_run, "say what would be done, change nothing");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the help, or the error
    return code == 0 ? 0 : 2;
  }
  options.direction = to->parsed()            ? Direction::kToCriDockerd
                      : checkpoints->parsed() ? Direction::kCheckpointsToCriDockerd
                                              : Direction::kFromCriDockerd;
  // The command says what it does itself; the libraries' INFO lines are not for its reader.
  common::SetLogLevel(common::LogLevel::kWarning);
  if (!options.dry_run && ::geteuid() != 0) {
    std::cerr << "dockershim migrate: run it as root ("
              << (checkpoints->parsed() ? "it writes in the runtimes' root directories"
                                        : "it stops and starts systemd units")
              << "); --dry-run needs no root\n";
    return 1;
  }

  // One switch at a time: a second command waits for the first.
  common::UniqueFd lock;
  if (!options.dry_run) {
    const std::string lock_path = options.paths.state + ".lock";
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(lock_path).parent_path(), ec);
    lock.Reset(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!lock || ::flock(lock.get(), LOCK_EX) != 0) {
      std::cerr << "dockershim migrate: cannot lock " << lock_path << ": " << std::strerror(errno) << "\n";
      return 1;
    }
  }
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::unique_ptr<System> system = NodeSystem(self);
  return Migrate(options, *system, std::cout, std::cerr);
}

}  // namespace shim::migrate
