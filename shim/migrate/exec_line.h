#pragma once
// A service's command line as systemd runs it (systemd.service(5), "Command lines";
// systemd.exec(5), "Environment"): its environment from Environment= and
// EnvironmentFile=, and ExecStart= turned into argv.
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shim/migrate/unit_file.h"

namespace shim::migrate {

using Environment = std::map<std::string, std::string>;

// Environment= assignments in order, then the EnvironmentFile= files in order, whose
// variables win ("-" before a path: a missing file is skipped). Specifiers resolved.
absl::StatusOr<Environment> ServiceEnvironment(const UnitFile& unit, const std::string& unit_name);

// The words of a setting: split at whitespace; "..." and '...' quote (also inside a
// word); C escapes (\\ \" \' \n \t \s \xHH).
absl::StatusOr<std::vector<std::string>> SplitWords(const std::string& text);

// One ExecStart= value as argv: the executable's prefixes (@ - : + !) dropped (with @,
// the word after the executable, which is argv[0], too); $NAME as a word of its own
// replaced by the variable's value split into words (none when unset or empty);
// ${NAME} replaced by its value inside a word; $$ is $.
absl::StatusOr<std::vector<std::string>> CommandLine(const std::string& exec_start, const Environment& env);

}  // namespace shim::migrate
