#include "shim/registry_auth.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"

namespace shim {
namespace {

nlohmann::json Decode(const std::string& header) {
  std::string std_b64 = header;
  for (char& c : std_b64) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  std::string raw;
  EXPECT_TRUE(absl::Base64Unescape(std_b64, &raw));
  return nlohmann::json::parse(raw);
}

TEST(RegistryAuth, EmptyConfigSendsNoHeader) {
  EXPECT_EQ(*EncodeRegistryAuth(runtime::v1::AuthConfig()), "");
}

TEST(RegistryAuth, UsernamePassword) {
  runtime::v1::AuthConfig auth;
  auth.set_username("tester");
  auth.set_password("p@ss?>>word");  // base64 of this has '+' or '/' in the standard alphabet
  auth.set_server_address("127.0.0.1:5001");
  std::string header = *EncodeRegistryAuth(auth);
  EXPECT_EQ(header.find_first_of("+/"), std::string::npos) << "must be URL-safe base64";
  EXPECT_EQ(header.size() % 4, 0u) << "Docker decodes padded base64";
  nlohmann::json j = Decode(header);
  EXPECT_EQ(j["username"], "tester");
  EXPECT_EQ(j["password"], "p@ss?>>word");
  EXPECT_EQ(j["serveraddress"], "127.0.0.1:5001");
}

TEST(RegistryAuth, AuthFieldIsSplit) {
  runtime::v1::AuthConfig auth;
  auth.set_auth(absl::Base64Escape("tester:se:cret"));
  nlohmann::json j = Decode(*EncodeRegistryAuth(auth));
  EXPECT_EQ(j["username"], "tester");
  EXPECT_EQ(j["password"], "se:cret");
}

TEST(RegistryAuth, MalformedAuthFieldIsInvalidAndNotEchoed) {
  runtime::v1::AuthConfig auth;
  auth.set_auth("!!not-base64-secret!!");
  auto header = EncodeRegistryAuth(auth);
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(header.status().message()).find("secret"), std::string::npos);
}

TEST(RegistryAuth, Tokens) {
  runtime::v1::AuthConfig auth;
  auth.set_identity_token("idtok");
  auth.set_registry_token("regtok");
  nlohmann::json j = Decode(*EncodeRegistryAuth(auth));
  EXPECT_EQ(j["identitytoken"], "idtok");
  EXPECT_EQ(j["registrytoken"], "regtok");
}

TEST(RegistryAuth, ScrubSecrets) {
  runtime::v1::AuthConfig auth;
  auth.set_password("hunter22");
  auth.set_registry_token("tok-123");
  auth.set_auth(absl::Base64Escape("bob:decoded-pw"));
  std::string scrubbed =
      ScrubSecrets("failed with hunter22 and tok-123 and decoded-pw and " + auth.auth(), auth);
  EXPECT_EQ(scrubbed.find("hunter22"), std::string::npos);
  EXPECT_EQ(scrubbed.find("tok-123"), std::string::npos);
  EXPECT_EQ(scrubbed.find("decoded-pw"), std::string::npos);
  EXPECT_EQ(scrubbed.find(auth.auth()), std::string::npos);
  EXPECT_NE(scrubbed.find("<redacted>"), std::string::npos);
}

}  // namespace
}  // namespace shim
