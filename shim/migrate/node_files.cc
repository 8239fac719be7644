#include "shim/migrate/node_files.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace shim::migrate {

namespace {

// CLI11's reader strips the quotes and unescapes nothing: "..." unless the value holds
// '"' or '\', then '...' (a TOML literal string, which has no escapes either).
absl::StatusOr<std::string> Quote(const std::string& key, const std::string& value) {
  if (value.find('\n') == std::string::npos) {
    if (value.find_first_of("\"\\") == std::string::npos) return absl::StrCat("\"", value, "\"");
    if (value.find('\'') == std::string::npos) return absl::StrCat("'", value, "'");
  }
  return absl::InvalidArgumentError(absl::StrCat("--", key, "=", value, ": a value the configuration file cannot hold"));
}

// "key = ..." lines of a config file (no tables there: only top-level keys).
std::string KeyOf(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  const size_t eq = line.find('=');
  if (line.empty() || line[0] == '#' || eq == absl::string_view::npos) return "";
  return std::string(absl::StripAsciiWhitespace(line.substr(0, eq)));
}

}  // namespace

absl::StatusOr<std::string> RenderConfig(const CriDockerdUnits& cri_dockerd, const std::string& previous) {
  std::string out = absl::StrCat(
      "# dockershim configuration, written by `dockershim migrate from-cri-dockerd` from the\n"
      "# flags of ", cri_dockerd.service, " (docs/migrating-from-cri-dockerd.md). Keys are the long\n"
      "# flag names; `dockershim --print-config` shows every key with its value.\n\n"
      "# dockershim's state; cri-dockerd's, read for the pods it started (never written).\n");
  std::set<std::string> written;
  auto add = [&](const std::string& key, const std::string& value) -> absl::Status {
    absl::StatusOr<std::string> quoted = Quote(key, value);
    if (!quoted.ok()) return quoted.status();
    absl::StrAppend(&out, key, " = ", *quoted, "\n");
    written.insert(key);
    return absl::OkStatus();
  };
  if (absl::Status s = add("root-directory", kDockershimRoot); !s.ok()) return s;
  if (absl::Status s = add("cri-dockerd-root-directory", cri_dockerd.flags.root_directory); !s.ok()) return s;
  bool header = false;
  for (const auto& [key, value] : cri_dockerd.flags.config) {
    if (written.count(key)) continue;
    if (!header) absl::StrAppend(&out, "\n# cri-dockerd's flags.\n");
    header = true;
    if (absl::Status s = add(key, value); !s.ok()) return s;
  }
  header = false;
  for (absl::string_view line : absl::StrSplit(previous, '\n')) {
    const std::string key = KeyOf(line);
    if (key.empty() || written.count(key) || IsCriDockerdFlag(key)) continue;
    if (!header) absl::StrAppend(&out, "\n# Kept from the previous configuration.\n");
    header = true;
    absl::StrAppend(&out, absl::StripAsciiWhitespace(line), "\n");
  }
  return out;
}

std::string RenderSocketDropIn(const CriDockerdUnits& cri_dockerd) {
  // The path as systemd reads it again: '%' starts a specifier.
  std::string out = absl::StrCat(
      "# Written by `dockershim migrate from-cri-dockerd`: dockershim serves the CRI socket\n"
      "# that cri-dockerd served, so the kubelet's --container-runtime-endpoint stays as it is.\n"
      "# `dockershim migrate to-cri-dockerd` removes this file.\n"
      "[Socket]\n"
      "ListenStream=\n"
      "ListenStream=", absl::StrReplaceAll(cri_dockerd.socket_path, {{"%", "%%"}}), "\n");
  if (cri_dockerd.socket_activated) {
    absl::StrAppend(&out, "SocketMode=", cri_dockerd.access.mode, "\nSocketUser=", cri_dockerd.access.user,
                    "\nSocketGroup=", cri_dockerd.access.group, "\n");
  }
  return out;
}

}  // namespace shim::migrate
