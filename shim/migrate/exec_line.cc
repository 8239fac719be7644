#include "shim/migrate/exec_line.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/files.h"
#include "common/status.h"

namespace shim::migrate {

namespace {

bool ValidName(absl::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// `text[*i]` is the character after a backslash: appends what it stands for.
absl::Status Unescape(const std::string& text, size_t* i, std::string* out) {
  const char c = text[*i];
  switch (c) {
    case 'n': *out += '\n'; return absl::OkStatus();
    case 't': *out += '\t'; return absl::OkStatus();
    case 's': *out += ' '; return absl::OkStatus();
    case 'x': {
      int value = 0;
      if (*i + 2 < text.size() && absl::ascii_isxdigit(static_cast<unsigned char>(text[*i + 1])) &&
          absl::ascii_isxdigit(static_cast<unsigned char>(text[*i + 2])) &&
          absl::SimpleHexAtoi(absl::string_view(text).substr(*i + 1, 2), &value)) {
        *out += static_cast<char>(value);
        *i += 2;
        return absl::OkStatus();
      }
      break;
    }
    default:
      *out += c;  // \\ \" \' and any other character stand for themselves
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("\"", text, "\": a bad \\x escape"));
}

// Lines of an environment file: KEY=VALUE, values optionally quoted.
absl::Status ParseEnvironmentFile(const std::string& text, Environment* env) {
  std::string joined;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    // A backslash at the end continues the line.
    if (absl::EndsWith(raw, "\\")) {
      absl::StrAppend(&joined, raw.substr(0, raw.size() - 1));
      continue;
    }
    const std::string line = joined + std::string(raw);
    joined.clear();
    absl::string_view l = absl::StripLeadingAsciiWhitespace(line);
    if (l.empty() || l[0] == '#' || l[0] == ';') continue;
    const size_t eq = l.find('=');
    if (eq == absl::string_view::npos) continue;
    const std::string key(absl::StripAsciiWhitespace(l.substr(0, eq)));
    if (!ValidName(key)) continue;
    absl::string_view value = absl::StripAsciiWhitespace(l.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
      ASSIGN_OR_RETURN(std::vector<std::string> words, SplitWords(std::string(value)));
      (*env)[key] = words.empty() ? "" : words.front();
    } else {
      (*env)[key] = std::string(value);
    }
  }
  return absl::OkStatus();
}

// ${NAME} inside a word, and $$.
std::string SubstituteBraced(const std::string& word, const Environment& env) {
  std::string out;
  for (size_t i = 0; i < word.size(); ++i) {
    if (word[i] == '$' && i + 1 < word.size() && word[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (word[i] == '$' && i + 1 < word.size() && word[i + 1] == '{') {
      const size_t end = word.find('}', i + 2);
      if (end != std::string::npos && ValidName(absl::string_view(word).substr(i + 2, end - i - 2))) {
        const auto it = env.find(word.substr(i + 2, end - i - 2));
        if (it != env.end()) out += it->second;
        i = end;
        continue;
      }
    }
    out += word[i];
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitWords(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == 0 && absl::ascii_isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (++i == text.size()) return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" ends with a backslash"));
      RETURN_IF_ERROR(Unescape(text, &i, &word));
    } else if (quote != 0 && c == quote) {
      quote = 0;
    } else if (quote == 0 && (c == '"' || c == '\'')) {
      quote = c;
    } else {
      word += c;
    }
  }
  if (quote != 0) return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" has an unterminated quote"));
  if (in_word) words.push_back(std::move(word));
  return words;
}

absl::StatusOr<Environment> ServiceEnvironment(const UnitFile& unit, const std::string& unit_name) {
  Environment env;
  for (const std::string& value : unit.Values("Service", "Environment")) {
    ASSIGN_OR_RETURN(std::string expanded, ExpandSpecifiers(value, unit_name));
    ASSIGN_OR_RETURN(std::vector<std::string> words, SplitWords(expanded));
    for (const std::string& word : words) {
      const size_t eq = word.find('=');
      if (eq != std::string::npos && ValidName(absl::string_view(word).substr(0, eq)))
        env[word.substr(0, eq)] = word.substr(eq + 1);
    }
  }
  for (const std::string& value : unit.Values("Service", "EnvironmentFile")) {
    absl::StatusOr<std::string> expanded = ExpandSpecifiers(value, unit_name);
    if (!expanded.ok()) return expanded.status();
    const bool optional = absl::StartsWith(*expanded, "-");
    const std::string path = optional ? expanded->substr(1) : *expanded;
    std::optional<std::string> text = common::ReadWholeFile(path);
    if (!text) {
      if (optional) continue;
      return absl::FailedPreconditionError(
          absl::StrCat(unit_name, ": cannot read its EnvironmentFile ", path, " (systemd would not start it either)"));
    }
    RETURN_IF_ERROR(common::Annotate(ParseEnvironmentFile(*text, &env), path));
  }
  return env;
}

absl::StatusOr<std::vector<std::string>> CommandLine(const std::string& exec_start, const Environment& env) {
  ASSIGN_OR_RETURN(std::vector<std::string> words, SplitWords(exec_start));
  if (words.empty()) return absl::InvalidArgumentError("ExecStart= is empty");
  absl::string_view program = words[0];
  bool own_argv0 = false;
  while (!program.empty() && absl::string_view("@-:+!").find(program.front()) != absl::string_view::npos) {
    own_argv0 |= program.front() == '@';
    program.remove_prefix(1);
  }
  std::vector<std::string> argv = {std::string(program)};
  for (size_t i = own_argv0 ? 2 : 1; i < words.size(); ++i) {
    absl::string_view word = words[i];
    if (absl::ConsumePrefix(&word, "$") && ValidName(word)) {
      const auto it = env.find(std::string(word));
      if (it == env.end()) continue;
      ASSIGN_OR_RETURN(std::vector<std::string> split, SplitWords(it->second));
      for (std::string& w : split) argv.push_back(std::move(w));
      continue;
    }
    argv.push_back(SubstituteBraced(words[i], env));
  }
  return argv;
}

}  // namespace shim::migrate
