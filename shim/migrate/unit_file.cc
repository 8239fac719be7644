#include "shim/migrate/unit_file.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/files.h"

namespace shim::migrate {

namespace fs = std::filesystem;

std::vector<std::string> DefaultUnitDirectories() {
  return {"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/lib/systemd/system",
          "/usr/lib/systemd/system"};
}

void UnitFile::Add(const std::string& text, const std::string& origin) {
  sources_.push_back(origin);
  std::string section;
  std::string pending;  // a line continued with a trailing backslash
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    // Comments may sit between the lines of a continued assignment.
    if (line.empty() && pending.empty()) continue;
    if (absl::StartsWith(line, "#") || absl::StartsWith(line, ";")) continue;
    if (absl::EndsWith(line, "\\")) {
      absl::StrAppend(&pending, line.substr(0, line.size() - 1), " ");
      continue;
    }
    const std::string full = pending + std::string(line);
    pending.clear();
    if (absl::StartsWith(full, "[") && absl::EndsWith(full, "]")) {
      section = full.substr(1, full.size() - 2);
      continue;
    }
    const size_t eq = full.find('=');
    if (section.empty() || eq == std::string::npos) continue;
    const std::string key(absl::StripAsciiWhitespace(absl::string_view(full).substr(0, eq)));
    const std::string value(absl::StripAsciiWhitespace(absl::string_view(full).substr(eq + 1)));
    std::vector<std::string>& values = values_[section][key];
    if (value.empty()) {
      values.clear();
    } else {
      values.push_back(value);
    }
  }
}

std::vector<std::string> UnitFile::Values(const std::string& section, const std::string& key) const {
  const auto s = values_.find(section);
  if (s == values_.end()) return {};
  const auto k = s->second.find(key);
  return k == s->second.end() ? std::vector<std::string>() : k->second;
}

std::string UnitFile::Value(const std::string& section, const std::string& key) const {
  std::vector<std::string> values = Values(section, key);
  return values.empty() ? "" : values.back();
}

namespace {

// systemd masks a unit (or a drop-in) with a link to /dev/null or an empty file.
bool Masked(const fs::path& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec)) && fs::read_symlink(path, ec) == "/dev/null") return true;
  return fs::is_regular_file(path, ec) && fs::file_size(path, ec) == 0;
}

}  // namespace

absl::StatusOr<UnitFile> LoadUnit(const std::string& name, const std::vector<std::string>& directories) {
  UnitFile unit;
  bool found = false;
  std::error_code ec;
  for (const std::string& dir : directories) {
    const fs::path path = fs::path(dir) / name;
    if (!fs::exists(fs::symlink_status(path, ec))) continue;
    if (Masked(path)) return absl::FailedPreconditionError(absl::StrCat(name, " is masked (", path.string(), ")"));
    std::optional<std::string> text = common::ReadWholeFile(path.string());
    if (!text) return absl::PermissionDeniedError(absl::StrCat("cannot read ", path.string()));
    unit.Add(*text, path.string());
    found = true;
    break;
  }
  if (!found) {
    return absl::NotFoundError(absl::StrCat("no ", name, " in ", absl::StrJoin(directories, ", ")));
  }
  // Drop-ins by file name; the first directory's file of a name hides the others.
  std::map<std::string, fs::path> dropins;
  for (const std::string& dir : directories) {
    for (const auto& entry : fs::directory_iterator(fs::path(dir) / (name + ".d"), ec)) {
      const std::string file = entry.path().filename().string();
      if (absl::EndsWith(file, ".conf")) dropins.emplace(file, entry.path());
    }
  }
  for (const auto& [file, path] : dropins) {
    if (Masked(path)) continue;
    std::optional<std::string> text = common::ReadWholeFile(path.string());
    if (!text) return absl::PermissionDeniedError(absl::StrCat("cannot read ", path.string()));
    unit.Add(*text, path.string());
  }
  return unit;
}

absl::StatusOr<std::string> ExpandSpecifiers(const std::string& value, const std::string& unit_name) {
  const size_t dot = unit_name.rfind('.');
  const std::string stem = unit_name.substr(0, dot);
  const size_t at = stem.find('@');
  const std::string prefix = stem.substr(0, at);
  const std::string instance = at == std::string::npos ? "" : stem.substr(at + 1);
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '%') {
      out += value[i];
      continue;
    }
    if (i + 1 == value.size()) return absl::InvalidArgumentError(absl::StrCat("\"", value, "\" ends with a lone %"));
    switch (value[++i]) {
      case '%': out += '%'; break;
      case 'n': out += unit_name; break;
      case 'N': out += stem; break;
      case 'p': out += prefix; break;
      case 'i': out += instance; break;
      case 't': out += "/run"; break;
      case 'S': out += "/var/lib"; break;
      case 'C': out += "/var/cache"; break;
      case 'L': out += "/var/log"; break;
      case 'E': out += "/etc"; break;
      case 'T': out += "/tmp"; break;
      case 'V': out += "/var/tmp"; break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("\"", value, "\": the specifier %", std::string(1, value[i]), " is not one this command resolves"));
    }
  }
  return out;
}

}  // namespace shim::migrate
