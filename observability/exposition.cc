#include "observability/exposition.h"

#include <charconv>
#include <cmath>

namespace observability {

namespace {

std::string Escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string EscapeHelp(std::string_view text) { return Escape(text, false); }
std::string EscapeLabelValue(std::string_view text) { return Escape(text, true); }

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, ec == std::errc() ? end : buf);
}

bool IsValidName(std::string_view name, bool colons) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colons && c == ':');
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void TextWriter::Family(std::string_view name, std::string_view help, std::string_view type) {
  out_.append("# HELP ").append(name).append(" ").append(EscapeHelp(help)).append("\n");
  out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void TextWriter::Sample(std::string_view name, const LabelPairs& labels, double value,
                        std::pair<std::string_view, std::string_view> extra) {
  out_.append(name);
  if (!labels.empty() || !extra.first.empty()) {
    out_ += '{';
    bool first = true;
    const auto add = [&](std::string_view label, std::string_view v) {
      if (!first) out_ += ',';
      first = false;
      out_.append(label).append("=\"").append(EscapeLabelValue(v)).append("\"");
    };
    for (const auto& [label, v] : labels) add(label, v);
    if (!extra.first.empty()) add(extra.first, extra.second);
    out_ += '}';
  }
  out_.append(" ").append(FormatValue(value)).append("\n");
}

}  // namespace observability
