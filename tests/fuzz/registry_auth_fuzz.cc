// Registry credentials: the CRI AuthConfig to Docker's X-Registry-Auth header, and the
// scrubbing of secrets from errors, on fields the input picks. The input is split at
// 0xff bytes into username, password, auth, identity token, registry token and a text
// (an error message that may hold any of them, and the header).
// - The header is base64url of JSON holding exactly the given user and password (or
//   those of "auth"), server address and tokens; a malformed "auth", or credentials
//   that are not UTF-8 (JSON cannot carry them), are INVALID_ARGUMENT, never a throw.
// - After ScrubSecrets, no secret and no header is left in the text. Secrets are
//   written in letters that "<redacted>" lacks, so that none is part of a redaction.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "api/cri.h"
#include "shim/registry_auth.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

// Maps bytes onto characters absent from "<redacted>", plus ':' and a few symbols.
std::string SecretText(std::string_view raw) {
  static constexpr std::string_view kAlphabet = "0123456789bfghijklmnopqsuvwxyzBFGHIJKLMNOPQSUVWXYZ:+/=_-!@#$%";
  std::string out;
  for (char c : raw) out += kAlphabet[static_cast<unsigned char>(c) % kAlphabet.size()];
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> parts =
      absl::StrSplit(absl::string_view(reinterpret_cast<const char*>(data), size), '\xff');
  parts.resize(std::max<std::size_t>(parts.size(), 6));
  runtime::v1::AuthConfig auth;
  auth.set_username(parts[0]);
  auth.set_password(SecretText(parts[1]));
  // Half the time a well-formed "auth": base64 of "user:password".
  std::string user = parts[0];
  user.erase(std::remove(user.begin(), user.end(), ':'), user.end());
  auth.set_auth(!parts[2].empty() && parts[2][0] % 2 == 0 ? absl::Base64Escape(user + ":" + SecretText(parts[2]))
                                                          : SecretText(parts[2]));
  auth.set_identity_token(SecretText(parts[3]));
  auth.set_registry_token(SecretText(parts[4]));
  auth.set_server_address("127.0.0.1:5001");

  const auto header = shim::EncodeRegistryAuth(auth);
  if (header.ok() && !header->empty()) {
    std::string decoded;
    Check(absl::WebSafeBase64Unescape(*header, &decoded));
    const nlohmann::json j = nlohmann::json::parse(decoded, nullptr, /*allow_exceptions=*/false);
    Check(j.is_object());
    Check(j.value("identitytoken", "") == auth.identity_token() && j.value("registrytoken", "") == auth.registry_token());
    Check(j.value("serveraddress", "") == auth.server_address());
    if (!auth.username().empty()) Check(j.value("username", "") == auth.username() && j.value("password", "") == auth.password());
  } else if (!header.ok()) {
    Check(header.status().code() == absl::StatusCode::kInvalidArgument);
  }

  // The text mixes the secrets and the header into the input's own bytes.
  const std::string encoded = header.ok() ? *header : "";
  std::string text = parts[5];
  for (const std::string* secret :
       {&auth.password(), &auth.auth(), &auth.identity_token(), &auth.registry_token(), &encoded})
    text += parts[5] + *secret;
  const std::string scrubbed = shim::ScrubSecrets(text, auth, encoded);
  for (const std::string* secret :
       {&auth.password(), &auth.identity_token(), &auth.registry_token(), &auth.auth(), &encoded})
    if (!secret->empty()) Check(scrubbed.find(*secret) == std::string::npos);
  std::string decoded_auth;
  if (absl::Base64Unescape(auth.auth(), &decoded_auth)) {
    const std::size_t colon = decoded_auth.find(':');
    // Its bytes are not drawn from SecretText's alphabet: a password such as "a" is in
    // the placeholder itself, so it is looked for only between placeholders.
    if (colon != std::string::npos && colon + 1 < decoded_auth.size())
      for (absl::string_view piece : absl::StrSplit(scrubbed, "<redacted>"))
        Check(piece.find(decoded_auth.substr(colon + 1)) == absl::string_view::npos);
  }
  return 0;
}
