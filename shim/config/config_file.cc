#include "shim/config/config_file.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace shim::config {

void AddConfigOptions(CLI::App& app, bool* print_config, const std::string& default_path) {
  app.set_config("--config", default_path, "TOML file whose keys are the long flag names (flags win)");
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_flag("--print-config", *print_config, "print the effective configuration as a config file and exit")
      ->configurable(false);
}

std::string DescribeParseError(const CLI::App& app, const CLI::ParseError& error) {
  const std::string what = error.what();
  // CLI11 throws ConfigError for a file's keys (unknown, or --config inside it);
  // FileError already names the missing file.
  if (error.get_name() != "ConfigError") return what;
  // Given with --config, else the default file (CLI11 records it only once read).
  const CLI::Option* option = app.get_config_ptr();
  const std::string file = option == nullptr           ? kDefaultConfigPath
                           : option->results().empty() ? option->get_default_str()
                                                       : option->results().back();
  constexpr absl::string_view kUnknown = "INI was not able to parse ";
  if (absl::StartsWith(what, kUnknown)) {
    absl::string_view key = absl::string_view(what).substr(kUnknown.size());
    // CLI11 reports a [table] as "<table>.++": there are no tables, only top-level keys.
    if (absl::ConsumeSuffix(&key, ".++")) return absl::StrCat(file, ": unknown section [", key, "] (keys are top-level)");
    return absl::StrCat(file, ": unknown key \"", key, "\" (keys are the long flag names)");
  }
  return absl::StrCat(file, ": ", what);
}

std::string EffectiveConfig(const CLI::App& app) {
  return "# dockershim configuration (dockershim --print-config); keys are the long flag names.\n" +
         app.config_to_str(/*default_also=*/true, /*write_description=*/true);
}

}  // namespace shim::config
