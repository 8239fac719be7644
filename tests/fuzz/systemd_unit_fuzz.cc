// dockershim migrate's readers of cri-dockerd's systemd units: a unit file's text, its
// ExecStart= values as argv (specifiers, quoting, variables), the flags as config keys.
// Whatever the text, none may crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shim/migrate/cri_dockerd_flags.h"
#include "shim/migrate/exec_line.h"
#include "shim/migrate/unit_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  shim::migrate::UnitFile unit;
  unit.Add(text, "fuzz.service");
  // A variable whose value is the input's start: $VAR splits it, ${VAR} inserts it.
  const shim::migrate::Environment env = {{"FLAGS", text.substr(0, 256)}};
  for (const std::string& exec : unit.Values("Service", "ExecStart")) {
    absl::StatusOr<std::string> expanded = shim::migrate::ExpandSpecifiers(exec, "fuzz.service");
    if (!expanded.ok()) continue;
    absl::StatusOr<std::vector<std::string>> argv = shim::migrate::CommandLine(*expanded, env);
    if (argv.ok() && !argv->empty())
      shim::migrate::MapCriDockerdFlags(std::vector<std::string>(argv->begin() + 1, argv->end()));
  }
  (void)shim::migrate::SplitWords(text);
  return 0;
}
