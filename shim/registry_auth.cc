#include "shim/registry_auth.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_replace.h"

namespace shim {
namespace {

struct UserPassword {
  std::string user, password;
};

std::optional<UserPassword> DecodeAuthField(const std::string& auth) {
  std::string decoded;
  if (!absl::Base64Unescape(auth, &decoded)) return std::nullopt;
  auto colon = decoded.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return UserPassword{decoded.substr(0, colon), decoded.substr(colon + 1)};
}

}  // namespace

std::string Base64UrlEncode(absl::string_view data) {
  std::string out = absl::Base64Escape(data);
  std::replace(out.begin(), out.end(), '+', '-');
  std::replace(out.begin(), out.end(), '/', '_');
  return out;
}

absl::StatusOr<std::string> EncodeRegistryAuth(const runtime::v1::AuthConfig& auth) {
  std::string user = auth.username(), password = auth.password();
  if (user.empty() && !auth.auth().empty()) {
    auto decoded = DecodeAuthField(auth.auth());
    if (!decoded) {
      return absl::InvalidArgumentError(
          "auth config: the \"auth\" field is not base64 of \"username:password\"");
    }
    user = decoded->user;
    password = decoded->password;
  }
  if (user.empty() && password.empty() && auth.identity_token().empty() && auth.registry_token().empty())
    return std::string();
  nlohmann::json j = {{"username", user},
                      {"password", password},
                      {"serveraddress", auth.server_address()},
                      {"identitytoken", auth.identity_token()},
                      {"registrytoken", auth.registry_token()}};
  // gRPC checks that CRI strings are UTF-8, but not what "auth" decodes to; dump()
  // throws on anything else, and replacing bytes would send other credentials.
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::ignore);
  if (text != j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
    return absl::InvalidArgumentError("auth config: the username or password is not valid UTF-8");
  return Base64UrlEncode(text);
}

std::string ScrubSecrets(std::string text, const runtime::v1::AuthConfig& auth, absl::string_view header) {
  std::vector<std::string> secrets = {auth.password(), auth.auth(), auth.identity_token(), auth.registry_token(),
                                      std::string(header)};
  if (auto decoded = DecodeAuthField(auth.auth())) secrets.push_back(decoded->password);
  // Longest first, so a secret containing another is removed whole.
  std::sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& s : secrets)
    if (!s.empty()) absl::StrReplaceAll({{s, "<redacted>"}}, &text);
  return text;
}

}  // namespace shim
