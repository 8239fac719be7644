#pragma once
// The configuration file: every command-line option of the app has a key of the same
// name in a TOML file (CLI11's config support), so flags other code adds later get one
// too. Flags given on the command line win over the file.
#include <CLI/CLI.hpp>
#include <string>

namespace shim::config {

inline constexpr char kDefaultConfigPath[] = "/etc/dockershim/config.toml";

// Adds --config PATH (read if present when not given; an explicit path must exist;
// unknown keys are errors) and --print-config (sets *print_config).
void AddConfigOptions(CLI::App& app, bool* print_config, const std::string& default_path = kDefaultConfigPath);

// One line for an operator: a config file's errors name the file.
std::string DescribeParseError(const CLI::App& app, const CLI::ParseError& error);

// The effective configuration (file, then flags, then defaults) in the file's own
// format: reading it back with --config gives the same configuration.
std::string EffectiveConfig(const CLI::App& app);

}  // namespace shim::config
