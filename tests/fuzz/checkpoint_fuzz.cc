// Sandbox checkpoint files on arbitrary bytes. The input is read as a whole file, and
// (when it is a JSON object) as the "data" of a file with the right version and
// checksum, so that the decoder's field checks are reached and not only the checksum's.
// - Decoding never crashes or throws; a file that decodes has a sandbox ID.
// - What decodes encodes back to a file that decodes to the same checkpoint.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "shim/checkpoint_store.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

void CheckDecode(const std::string& text) {
  const auto decoded = shim::DecodeCheckpoint(text);
  if (!decoded.ok()) return;
  Check(!decoded->sandbox_id.empty());
  const auto again = shim::DecodeCheckpoint(shim::EncodeCheckpoint(*decoded));
  Check(again.ok() && *again == *decoded);
}

// The file format's envelope, written independently of checkpoint_store.cc.
std::string Envelope(const nlohmann::json& data) {
  const std::string canonical = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(canonical.data()),
                          static_cast<uInt>(canonical.size()));
  char checksum[32];
  std::snprintf(checksum, sizeof checksum, "crc32:%08x", static_cast<unsigned>(crc));
  return nlohmann::json{{"version", "dockershim/v1"}, {"data", data}, {"checksum", checksum}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckDecode(text);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) CheckDecode(Envelope(j));
  return 0;
}
