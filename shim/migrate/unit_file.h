#pragma once
// systemd unit files as systemd reads them (systemd.syntax(7), systemd.unit(5)): the
// unit file found first along the search path, then its drop-ins
// (<dir>/<unit>.d/*.conf, ordered by file name over all directories, a name in an
// earlier directory hiding the same name in later ones). An empty assignment
// ("ExecStart=") resets what came before it, as systemd does for list settings.
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shim::migrate {

// Where systemd looks for system units, highest priority first.
std::vector<std::string> DefaultUnitDirectories();

class UnitFile {
 public:
  // Appends the assignments of one file (the unit file or a drop-in) in order. What
  // systemd ignores with a warning is ignored: comments, lines without '=',
  // assignments before the first section.
  void Add(const std::string& text, const std::string& origin);

  // The values of `key` in `section` after resets, in order; empty when unset.
  std::vector<std::string> Values(const std::string& section, const std::string& key) const;
  // The last value, or "" when unset.
  std::string Value(const std::string& section, const std::string& key) const;

  // The files read, in order: the unit file, then its drop-ins.
  const std::vector<std::string>& sources() const { return sources_; }

 private:
  std::map<std::string, std::map<std::string, std::vector<std::string>>> values_;
  std::vector<std::string> sources_;
};

// A unit as systemd would load it from `directories`. NOT_FOUND when no directory holds
// the unit file; FAILED_PRECONDITION when it is masked (a link to /dev/null or empty).
absl::StatusOr<UnitFile> LoadUnit(const std::string& name, const std::vector<std::string>& directories);

// Resolves the specifiers of a system unit's settings (systemd.unit(5), "Specifiers")
// that are the same on every host: %% %n %N %p %i %t %S %C %L %E %T %V.
// INVALID_ARGUMENT names any other.
absl::StatusOr<std::string> ExpandSpecifiers(const std::string& value, const std::string& unit_name);

}  // namespace shim::migrate
