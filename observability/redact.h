#pragma once
// Keeps credentials out of what the trace logs of Docker and CNI bodies.
#include <cstddef>
#include <string>
#include <string_view>

namespace observability {

// `text` with the values of JSON members that hold credentials replaced by
// "<redacted>": members named password, auth, identitytoken, registrytoken, or with
// "password", "secret" or "token" in their name (any case); and, since Kubernetes
// passes secrets as environment variables, every value of an "Env" list ("K=V"
// keeps K). Works on invalid or cut JSON: it scans for "name": "value" pairs.
std::string RedactSecrets(std::string_view text);

// A request target as a reader wants it: %XX escapes decoded (Docker's filters are
// URL-encoded JSON).
std::string DecodeTarget(std::string_view target);

// `text` if it has at most `limit` bytes, else its first `limit` bytes and
// "... (N bytes)". Newlines become "\n" so that a body stays on one log line.
std::string Abbreviate(std::string_view text, std::size_t limit);

}  // namespace observability
