#include "shim/naming.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace shim {
namespace {

using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

runtime::v1::PodSandboxMetadata Meta(const std::string& name, const std::string& ns, const std::string& uid,
                                     uint32_t attempt) {
  runtime::v1::PodSandboxMetadata m;
  m.set_name(name);
  m.set_namespace_(ns);
  m.set_uid(uid);
  m.set_attempt(attempt);
  return m;
}

void ExpectMeta(const runtime::v1::PodSandboxMetadata& got, const runtime::v1::PodSandboxMetadata& want) {
  EXPECT_EQ(got.name(), want.name());
  EXPECT_EQ(got.namespace_(), want.namespace_());
  EXPECT_EQ(got.uid(), want.uid());
  EXPECT_EQ(got.attempt(), want.attempt());
}

TEST(NamingSandbox, MakesCriDockerdName) {
  EXPECT_EQ(MakeSandboxName(Meta("nginx-7c5d", "default", "0b8e2d4e-1f3a-4c8b-9d2e-5f6a7b8c9d0e", 2)),
            "k8s_POD_nginx-7c5d_default_0b8e2d4e-1f3a-4c8b-9d2e-5f6a7b8c9d0e_2");
  EXPECT_EQ(MakeSandboxName(Meta("p", "ns", "u", 0)), "k8s_POD_p_ns_u_0");
}

TEST(NamingSandbox, RoundTrips) {
  for (const auto& m : {Meta("nginx-7c5d", "kube-system", "0b8e2d4e-1f3a-4c8b-9d2e-5f6a7b8c9d0e", 0),
                        Meta("a.b.c", "ns", "uid", 7), Meta("p", "ns", "u", 4294967295u),
                        // crictl allows an empty uid; the name still round-trips.
                        Meta("p", "ns", "", 1)}) {
    auto parsed = ParseSandboxName(MakeSandboxName(m));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ExpectMeta(*parsed, m);
  }
}

TEST(NamingSandbox, AcceptsDockerLeadingSlash) {
  auto parsed = ParseSandboxName("/k8s_POD_web_prod_1234_3");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ExpectMeta(*parsed, Meta("web", "prod", "1234", 3));
}

TEST(NamingSandbox, AcceptsCriDockerdRandomSuffix) {
  // cri-dockerd's randomizeName appends "_%08x" after a name conflict.
  auto parsed = ParseSandboxName("/k8s_POD_web_prod_1234_3_0a1b2c3d");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ExpectMeta(*parsed, Meta("web", "prod", "1234", 3));
  // Like cri-dockerd, the suffix's content is not checked.
  EXPECT_TRUE(ParseSandboxName("k8s_POD_web_prod_1234_3_anything").ok());
}

TEST(NamingSandbox, AttemptLikeGoParseUint32) {
  auto parsed = ParseSandboxName("k8s_POD_p_ns_u_007");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->attempt(), 7u);
}

class NamingBadSandboxName : public ::testing::TestWithParam<std::string> {};

TEST_P(NamingBadSandboxName, IsInvalidArgument) {
  auto parsed = ParseSandboxName(GetParam());
  ASSERT_FALSE(parsed.ok()) << "parsed " << GetParam();
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << parsed.status();
  EXPECT_FALSE(parsed.status().message().empty());
}

INSTANTIATE_TEST_SUITE_P(NamingTable, NamingBadSandboxName,
                         ::testing::Values("",                                   // empty
                                           "/",                                  // only the slash
                                           "nginx",                              // plain container
                                           "/festive_turing",                    // docker's random name
                                           "k8s_POD_p_ns_u",                     // 5 parts
                                           "k8s_POD_p_ns_u_1_x_y",               // 8 parts
                                           "k9s_POD_p_ns_u_1",                   // wrong prefix
                                           "K8S_POD_p_ns_u_1",                   // prefix is case sensitive
                                           "//k8s_POD_p_ns_u_1",                 // only one '/' is stripped
                                           "k8s_app_p_ns_u_1",                   // a workload container
                                           "k8s_pod_p_ns_u_1",                   // "POD" is case sensitive
                                           "k8s_POD_p_ns_u_",                    // empty attempt
                                           "k8s_POD_p_ns_u_-1",                  // negative
                                           "k8s_POD_p_ns_u_+1",                  // sign
                                           "k8s_POD_p_ns_u_ 1",                  // space
                                           "k8s_POD_p_ns_u_1a",                  // trailing junk
                                           "k8s_POD_p_ns_u_0x1",                 // hex
                                           "k8s_POD_p_ns_u_4294967296",          // > uint32
                                           "k8s_POD_p_ns_u_99999999999999999999999",  // overflow
                                           "k8s_POD_p_ns_u_x_1"));               // attempt in the wrong place

TEST(NamingSandbox, UnderscoreInFieldsDoesNotRoundTrip) {
  // Documented limitation shared with cri-dockerd: fields are not escaped.
  // An extra non-numeric part is rejected...
  auto parsed = ParseSandboxName(MakeSandboxName(Meta("p", "ns", "a_b", 1)));
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  // ...and a numeric one shifts the fields (uid "a_5", attempt 0 → uid "a", attempt 5).
  parsed = ParseSandboxName(MakeSandboxName(Meta("p", "ns", "a_5", 0)));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->uid(), "a");
  EXPECT_EQ(parsed->attempt(), 5u);
}

runtime::v1::ContainerMetadata CMeta(const std::string& name, uint32_t attempt) {
  runtime::v1::ContainerMetadata m;
  m.set_name(name);
  m.set_attempt(attempt);
  return m;
}

TEST(NamingContainer, MakesCriDockerdName) {
  // The container's attempt is in the name; the pod's is not.
  EXPECT_EQ(
      MakeContainerName(Meta("nginx-7c5d", "default", "0b8e2d4e-1f3a-4c8b-9d2e-5f6a7b8c9d0e", 9), CMeta("web", 2)),
      "k8s_web_nginx-7c5d_default_0b8e2d4e-1f3a-4c8b-9d2e-5f6a7b8c9d0e_2");
  EXPECT_EQ(MakeContainerName(Meta("p", "ns", "u", 0), CMeta("c", 0)), "k8s_c_p_ns_u_0");
}

TEST(NamingContainer, RoundTrips) {
  struct Case {
    runtime::v1::PodSandboxMetadata pod;
    runtime::v1::ContainerMetadata container;
  };
  for (const Case& c : {Case{Meta("nginx-7c5d", "kube-system", "0b8e2d4e-1f3a", 0), CMeta("web", 0)},
                        Case{Meta("a.b.c", "ns", "uid", 0), CMeta("sidecar-1", 7)},
                        Case{Meta("p", "ns", "u", 0), CMeta("c", 4294967295u)},
                        Case{Meta("p", "ns", "", 0), CMeta("pod", 1)}}) {  // lowercase "pod" is a container
    auto parsed = ParseContainerName(MakeContainerName(c.pod, c.container));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ExpectMeta(parsed->sandbox, c.pod);
    EXPECT_EQ(parsed->container.name(), c.container.name());
    EXPECT_EQ(parsed->container.attempt(), c.container.attempt());
  }
}

TEST(NamingContainer, AcceptsDockerLeadingSlashAndRandomSuffix) {
  for (const char* name :
       {"/k8s_web_pod_prod_1234_3", "k8s_web_pod_prod_1234_3_0a1b2c3d", "/k8s_web_pod_prod_1234_3_x"}) {
    auto parsed = ParseContainerName(name);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.status();
    ExpectMeta(parsed->sandbox, Meta("pod", "prod", "1234", 0));
    EXPECT_EQ(parsed->container.name(), "web") << name;
    EXPECT_EQ(parsed->container.attempt(), 3u) << name;
  }
}

class NamingBadContainerName : public ::testing::TestWithParam<std::string> {};

TEST_P(NamingBadContainerName, IsInvalidArgument) {
  auto parsed = ParseContainerName(GetParam());
  ASSERT_FALSE(parsed.ok()) << "parsed " << GetParam();
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << parsed.status();
  EXPECT_FALSE(parsed.status().message().empty());
}

INSTANTIATE_TEST_SUITE_P(NamingTable, NamingBadContainerName,
                         ::testing::Values("",                          // empty
                                           "/",                         // only the slash
                                           "/festive_turing",           // docker's random name
                                           "k8s_c_p_ns_u",              // 5 parts
                                           "k8s_c_p_ns_u_1_x_y",        // 8 parts
                                           "k9s_c_p_ns_u_1",            // wrong prefix
                                           "//k8s_c_p_ns_u_1",          // only one '/' is stripped
                                           "k8s_POD_p_ns_u_1",          // a sandbox
                                           "/k8s_POD_p_ns_u_1_0a1b2c3d",  // a sandbox renamed after a conflict
                                           "k8s__p_ns_u_1",             // empty container name
                                           "k8s_c_p_ns_u_",             // empty attempt
                                           "k8s_c_p_ns_u_-1",           // negative
                                           "k8s_c_p_ns_u_4294967296",   // > uint32
                                           "k8s_c_p_ns_u_x_1"));        // attempt in the wrong place

TEST(NamingContainer, ErrorsSayWhatWasExpected) {
  auto parsed = ParseContainerName("k8s_c_p_ns_u");
  EXPECT_THAT(std::string(parsed.status().message()),
              ::testing::HasSubstr("k8s_<container>_<pod>_<namespace>_<uid>_<attempt>"));
  parsed = ParseContainerName("k8s_POD_p_ns_u_1");
  EXPECT_THAT(std::string(parsed.status().message()), ::testing::HasSubstr("pod sandbox"));
  // The sandbox parser keeps its own wording.
  EXPECT_THAT(std::string(ParseSandboxName("k8s_p_ns_u").status().message()),
              ::testing::HasSubstr("not a sandbox name (want k8s_POD_<name>_<namespace>_<uid>_<attempt>"));
}

google::protobuf::Map<std::string, std::string> PMap(std::initializer_list<std::pair<const std::string, std::string>> kv) {
  google::protobuf::Map<std::string, std::string> m;
  for (const auto& [k, v] : kv) m[k] = v;
  return m;
}

std::map<std::string, std::string> ToStd(const google::protobuf::Map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

TEST(NamingLabels, MakeMergesLabelsAnnotationsAndInternal) {
  auto labels = MakeLabels(PMap({{"app", "web"}, {"io.kubernetes.pod.name", "web-1"}}),
                           PMap({{"kubernetes.io/config.source", "api"}, {"seen", "yes"}}),
                           {{kContainerTypeLabel, kContainerTypeSandbox}});
  EXPECT_THAT(labels, UnorderedElementsAre(Pair("app", "web"), Pair("io.kubernetes.pod.name", "web-1"),
                                           Pair("annotation.kubernetes.io/config.source", "api"),
                                           Pair("annotation.seen", "yes"),
                                           Pair("io.kubernetes.docker.type", "podsandbox")));
}

TEST(NamingLabels, InternalLabelsWin) {
  auto labels = MakeLabels(PMap({{kContainerTypeLabel, "container"}, {kSandboxIdLabel, "forged"}, {"annotation.x", "label"}}),
                           PMap({{"x", "annotation"}}),
                           {{kContainerTypeLabel, kContainerTypeSandbox}, {kSandboxIdLabel, "real"}});
  EXPECT_EQ(labels[kContainerTypeLabel], kContainerTypeSandbox);
  EXPECT_EQ(labels[kSandboxIdLabel], "real");
  // Like cri-dockerd, an annotation overwrites a user label of the same Docker key.
  EXPECT_EQ(labels["annotation.x"], "annotation");
  EXPECT_EQ(labels.size(), 3u);
}

TEST(NamingLabels, SplitSeparatesAndDropsInternal) {
  std::map<std::string, std::string> docker = {
      {"app", "web"},
      {"io.kubernetes.pod.uid", "1234"},
      {"annotation.kubernetes.io/config.seen", "2024"},
      {"annotation.", "empty-key"},
      {kContainerTypeLabel, kContainerTypeContainer},
      {kSandboxIdLabel, "abc"},
      {kContainerLogPathLabel, "/var/log/pods/x/0.log"},
      {"io.kubernetes.container.name", "nginx"},  // kept for workload containers
  };
  google::protobuf::Map<std::string, std::string> labels, annotations;
  labels["stale"] = "cleared";
  SplitLabels(docker, &labels, &annotations);
  EXPECT_THAT(ToStd(labels), UnorderedElementsAre(Pair("app", "web"), Pair("io.kubernetes.pod.uid", "1234"),
                                                  Pair("io.kubernetes.container.name", "nginx")));
  EXPECT_THAT(ToStd(annotations),
              UnorderedElementsAre(Pair("kubernetes.io/config.seen", "2024"), Pair("", "empty-key")));
}

TEST(NamingLabels, SplitDropsSandboxContainerNameLikeCriDockerd) {
  // cri-dockerd labels its sandboxes io.kubernetes.container.name=POD and hides it.
  std::map<std::string, std::string> docker = {
      {kContainerTypeLabel, kContainerTypeSandbox}, {"io.kubernetes.container.name", "POD"}, {"app", "web"}};
  google::protobuf::Map<std::string, std::string> labels, annotations;
  SplitLabels(docker, &labels, &annotations);
  EXPECT_THAT(ToStd(labels), UnorderedElementsAre(Pair("app", "web")));
  EXPECT_THAT(ToStd(annotations), IsEmpty());
}

TEST(NamingLabels, MakeThenSplitRoundTrips) {
  auto user_labels = PMap({{"app", "web"}, {"tier", "front"}});
  auto user_annotations = PMap({{"a/b", "1"}, {"c", ""}});
  auto docker = MakeLabels(user_labels, user_annotations,
                           {{kContainerTypeLabel, kContainerTypeContainer}, {kSandboxIdLabel, "sb"},
                            {kContainerLogPathLabel, "/l"}});
  google::protobuf::Map<std::string, std::string> labels, annotations;
  SplitLabels(docker, &labels, &annotations);
  EXPECT_EQ(ToStd(labels), ToStd(user_labels));
  EXPECT_EQ(ToStd(annotations), ToStd(user_annotations));
}

TEST(NamingLabels, SplitToleratesNullOutputs) {
  google::protobuf::Map<std::string, std::string> labels;
  SplitLabels({{"a", "1"}, {"annotation.b", "2"}}, &labels, nullptr);
  EXPECT_THAT(ToStd(labels), UnorderedElementsAre(Pair("a", "1")));
}

TEST(NamingLabels, LabelValueAndSelector) {
  const std::map<std::string, std::string> labels = {{"app", "web"}, {"tier", "front"}};
  EXPECT_EQ(LabelValue(labels, "app"), "web");
  EXPECT_EQ(LabelValue(labels, "absent"), "");
  google::protobuf::Map<std::string, std::string> selector;
  EXPECT_TRUE(MatchesLabelSelector(selector, labels));  // an empty selector selects all
  selector["app"] = "web";
  EXPECT_TRUE(MatchesLabelSelector(selector, labels));
  selector["tier"] = "back";
  EXPECT_FALSE(MatchesLabelSelector(selector, labels));
  selector.erase("tier");
  selector["zone"] = "a";
  EXPECT_FALSE(MatchesLabelSelector(selector, labels));
}

}  // namespace
}  // namespace shim
