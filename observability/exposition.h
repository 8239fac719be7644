#pragma once
// Prometheus text exposition format 0.0.4: "# HELP", "# TYPE" and sample lines.
// https://prometheus.io/docs/instrumenting/exposition_formats/
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace observability {

using LabelPairs = std::vector<std::pair<std::string_view, std::string_view>>;

inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// HELP text: backslash and newline escaped.
std::string EscapeHelp(std::string_view text);
// Label values: backslash, double quote and newline escaped.
std::string EscapeLabelValue(std::string_view text);
// Shortest text that reads back as `value`; "+Inf", "-Inf", "NaN" as Prometheus spells them.
std::string FormatValue(double value);
// Whether `name` is a valid metric (`colons`) or label name.
bool IsValidName(std::string_view name, bool colons);

class TextWriter {
 public:
  // Starts a family; `type` is counter, gauge, histogram, summary or untyped.
  void Family(std::string_view name, std::string_view help, std::string_view type);
  // `name{labels} value`; `extra` (such as le) comes after `labels`.
  void Sample(std::string_view name, const LabelPairs& labels, double value,
              std::pair<std::string_view, std::string_view> extra = {});

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace observability
