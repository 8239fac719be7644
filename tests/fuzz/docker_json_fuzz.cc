// What dockerclient decodes from Docker's answers, on arbitrary bytes: the JSON
// decoders of version, info, image and container lists and inspects (lenient: they
// never throw, whatever types the fields have), an events line, an error body and the
// API version string. Any exception that escapes is a crash.
// - A decoded event line has a type and an actor ID (else it is INVALID_ARGUMENT).
// - An error body's message is never longer than the body.
// - An API version reads back from its numbers.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "dockerclient/api_version.h"
#include "dockerclient/errors.h"
#include "dockerclient/event_stream.h"
#include "dockerclient/types.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

void DecodeAll(const nlohmann::json& j) {
  dockerclient::ParseVersion(j);
  dockerclient::ParseInfo(j);
  dockerclient::ParseImageSummary(j);
  dockerclient::ParseImageInspect(j);
  dockerclient::ParseContainerSummary(j);
  dockerclient::ParseContainerInspect(j);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto event = dockerclient::ParseEventLine(text); event.ok()) {
    Check(!event->type.empty() && !event->id.empty());
  } else {
    Check(event.status().code() == absl::StatusCode::kInvalidArgument);
  }
  Check(dockerclient::DockerErrorMessage(text).size() <= text.size());
  if (auto version = dockerclient::ParseApiVersion(text)) {
    Check(dockerclient::ParseApiVersion(absl::StrCat(version->first, ".", version->second)) == version);
  }

  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  DecodeAll(j);
  // Lists come as arrays of the same objects.
  if (j.is_array())
    for (const nlohmann::json& item : j) DecodeAll(item);
  return 0;
}
