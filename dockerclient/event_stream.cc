#include "dockerclient/event_stream.h"

#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "dockerclient/escape.h"

namespace dockerclient {

namespace {

using json = nlohmann::json;

// An event is a few KiB (the container's labels); a longer line is dropped.
constexpr std::size_t kMaxLine = 1 << 20;

std::string StringAt(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

absl::StatusOr<DockerEvent> ParseEventLine(std::string_view line) {
  json parsed = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return absl::InvalidArgumentError("docker event: not a JSON object");
  DockerEvent event;
  event.type = StringAt(parsed, "Type");
  event.action = StringAt(parsed, "Action");
  if (auto actor = parsed.find("Actor"); actor != parsed.end() && actor->is_object()) {
    event.id = StringAt(*actor, "ID");
    if (auto attrs = actor->find("Attributes"); attrs != actor->end() && attrs->is_object()) {
      for (const auto& [k, v] : attrs->items()) {
        if (v.is_string()) event.attributes.emplace(k, v.get<std::string>());
      }
    }
  }
  if (auto nano = parsed.find("timeNano"); nano != parsed.end() && nano->is_number_integer()) {
    event.time_nano = nano->get<int64_t>();
  } else if (auto secs = parsed.find("time"); secs != parsed.end() && secs->is_number_integer()) {
    // Seconds past year 2262 do not fit in nanoseconds: such a line is not an event.
    if (const int64_t s = secs->get<int64_t>(); s > 0 && s <= std::numeric_limits<int64_t>::max() / 1000000000)
      event.time_nano = s * 1000000000;
  }
  if (event.type.empty() || event.action.empty() || event.id.empty() || event.time_nano <= 0) {
    return absl::InvalidArgumentError("docker event: Type, Action, Actor.ID or time missing");
  }
  return event;
}

EventStream::EventStream(boost::asio::any_io_executor executor, const EventStreamOptions& o, OnEvent on_event,
                         OnEnd on_end) {
  json filters = {{"type", json::array({"container"})}};
  if (!o.labels.empty()) filters["label"] = o.labels;
  std::string target = absl::StrCat("/v", o.api_version, "/events?filters=", Escape(filters.dump()));
  if (!o.since.empty()) absl::StrAppend(&target, "&since=", o.since);
  // The line being assembled lives with the callback: the body comes in arbitrary pieces.
  struct Line {
    std::string text;
    bool overlong = false;  // dropped at its end
  };
  auto line = std::make_shared<Line>();
  auto on_data = [line, on_event = std::move(on_event)](std::string_view data) {
    while (!data.empty()) {
      const std::size_t nl = data.find('\n');
      const std::string_view piece = data.substr(0, nl);
      if (line->text.size() + piece.size() > kMaxLine) {
        line->overlong = true;
        line->text.clear();
      } else if (!line->overlong) {
        line->text.append(piece);
      }
      if (nl == std::string_view::npos) return;
      data.remove_prefix(nl + 1);
      if (!line->overlong && !line->text.empty()) {
        absl::StatusOr<DockerEvent> event = ParseEventLine(line->text);
        if (event.ok()) {
          on_event(*std::move(event));
        } else {
          LOG_DEBUG << "skipping a Docker event line: " << event.status().message();
        }
      } else if (line->overlong) {
        LOG_WARN << "skipping a Docker event line longer than " << kMaxLine << " bytes";
      }
      line->text.clear();
      line->overlong = false;
    }
  };
  body_ = std::make_shared<BodyStream>(std::move(executor), o.socket_path, std::move(target), "follow Docker's events",
                                       std::move(on_data), std::move(on_end));
}

}  // namespace dockerclient
