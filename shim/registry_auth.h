#pragma once
// CRI AuthConfig -> Docker's X-Registry-Auth header, and scrubbing of secrets
// from any text that could reach a log or an error message.
#include <string>

#include "absl/status/statusor.h"
#include "api/cri.h"

namespace shim {

// base64url(JSON) as the Engine API expects. `auth` ("base64(user:password)") is
// split into username/password when username is empty. Empty config -> "".
// The error for a malformed `auth` never contains the value.
absl::StatusOr<std::string> EncodeRegistryAuth(const runtime::v1::AuthConfig& auth);

// Replaces every secret of `auth` (password, auth, tokens, and the decoded
// password) found in `text` with "<redacted>", and `header`, the X-Registry-Auth
// value made of them, which decodes to all of them.
std::string ScrubSecrets(std::string text, const runtime::v1::AuthConfig& auth, absl::string_view header = {});

// URL-safe base64 with padding (Go's base64.URLEncoding).
std::string Base64UrlEncode(absl::string_view data);

}  // namespace shim
