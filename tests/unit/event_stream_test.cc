// Docker's events lines and which of them are CRI container events (pure, table tests).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "dockerclient/event_stream.h"
#include "shim/events/cri_event.h"

namespace {

namespace v1 = runtime::v1;
using dockerclient::DockerEvent;
using dockerclient::ParseEventLine;

// As Docker 20.10 sends it (one line).
constexpr char kStart[] =
    R"({"status":"start","id":"c1","from":"busybox","Type":"container","Action":"start","Actor":{"ID":"c1",)"
    R"("Attributes":{"image":"busybox","io.kubernetes.docker.type":"container","io.kubernetes.sandbox.id":"s1",)"
    R"("name":"k8s_app_pod_ns_uid_0"}},"scope":"local","time":1760000000,"timeNano":1760000000123456789})";

TEST(ParseEventLine, ReadsTypeActionActorAndTime) {
  absl::StatusOr<DockerEvent> e = ParseEventLine(kStart);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->type, "container");
  EXPECT_EQ(e->action, "start");
  EXPECT_EQ(e->id, "c1");
  EXPECT_EQ(e->time_nano, 1760000000123456789);
  EXPECT_EQ(e->attributes.at("io.kubernetes.sandbox.id"), "s1");
  EXPECT_EQ(e->attributes.at("name"), "k8s_app_pod_ns_uid_0");
}

TEST(ParseEventLine, ReadsApi152LinesWithoutTheLegacyFields) {
  // Docker 29.7.2 at API 1.55 (application/jsonl): no "status", "id" or "from".
  absl::StatusOr<DockerEvent> e = ParseEventLine(
      R"({"Type":"container","Action":"kill","Actor":{"ID":"3736","Attributes":{"image":"busybox",)"
      R"("name":"k8s_app_pod_ns_uid_0","signal":"15"}},"scope":"local","time":1796536299,)"
      R"("timeNano":1796536299822802622})");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->type, "container");
  EXPECT_EQ(e->action, "kill");
  EXPECT_EQ(e->id, "3736");
  EXPECT_EQ(e->time_nano, 1796536299822802622);
  EXPECT_EQ(e->attributes.at("signal"), "15");
}

TEST(ParseEventLine, TakesSecondsWithoutTimeNano) {
  absl::StatusOr<DockerEvent> e =
      ParseEventLine(R"({"Type":"container","Action":"die","Actor":{"ID":"c1"},"time":1760000000})");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->time_nano, 1760000000000000000);
  EXPECT_TRUE(e->attributes.empty());
}

TEST(ParseEventLine, SkipsNonStringAttributes) {
  absl::StatusOr<DockerEvent> e = ParseEventLine(
      R"({"Type":"container","Action":"die","Actor":{"ID":"c1","Attributes":{"exitCode":"0","n":1}},"timeNano":5})");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->attributes.size(), 1u);
  EXPECT_EQ(e->attributes.at("exitCode"), "0");
}

TEST(ParseEventLine, RejectsMalformedLines) {
  for (const char* line : {
           "",
           "not json",
           R"({"Type":"container","Action":"start")",                       // cut
           R"(["Type","container"])",                                        // not an object
           R"({"Type":"container","Action":"start","timeNano":5})",          // no actor
           R"({"Type":"container","Actor":{"ID":"c1"},"timeNano":5})",       // no action
           R"({"Action":"start","Actor":{"ID":"c1"},"timeNano":5})",         // no type
           R"({"Type":"container","Action":"start","Actor":{"ID":"c1"}})",   // no time
           R"({"Type":"container","Action":"start","Actor":{"ID":7},"timeNano":5})",
       }) {
    EXPECT_FALSE(ParseEventLine(line).ok()) << line;
  }
}

DockerEvent Event(std::string action, std::string kind, std::string sandbox = "s1") {
  DockerEvent e;
  e.type = "container";
  e.action = std::move(action);
  e.id = "c1";
  e.time_nano = 42;
  if (!kind.empty()) e.attributes["io.kubernetes.docker.type"] = kind;
  if (!sandbox.empty()) e.attributes["io.kubernetes.sandbox.id"] = sandbox;
  return e;
}

TEST(ToCriEvent, MapsLifecycleActions) {
  const struct {
    const char* action;
    v1::ContainerEventType want;
  } cases[] = {
      {"create", v1::CONTAINER_CREATED_EVENT},
      {"start", v1::CONTAINER_STARTED_EVENT},
      {"die", v1::CONTAINER_STOPPED_EVENT},
      {"destroy", v1::CONTAINER_DELETED_EVENT},
  };
  for (const auto& c : cases) {
    std::optional<shim::events::CriEvent> cri = shim::events::ToCriEvent(Event(c.action, "container"));
    ASSERT_TRUE(cri.has_value()) << c.action;
    EXPECT_EQ(cri->type, c.want) << c.action;
    EXPECT_EQ(cri->container_id, "c1");
    EXPECT_EQ(cri->sandbox_id, "s1");
    EXPECT_FALSE(cri->is_sandbox);
    EXPECT_EQ(cri->created_at, 42);
  }
}

TEST(ToCriEvent, SandboxEventsAreTheirOwnPods) {
  std::optional<shim::events::CriEvent> cri = shim::events::ToCriEvent(Event("start", "podsandbox", ""));
  ASSERT_TRUE(cri.has_value());
  EXPECT_TRUE(cri->is_sandbox);
  EXPECT_EQ(cri->container_id, "c1");
  EXPECT_EQ(cri->sandbox_id, "c1");
}

TEST(ToCriEvent, IgnoresOtherActionsAndContainers) {
  for (const char* action : {"exec_create: sh -c true", "exec_start: sh", "exec_die", "attach", "resize", "kill",
                             "stop", "pause", "health_status: healthy", "oom", "rename", "commit"}) {
    EXPECT_FALSE(shim::events::ToCriEvent(Event(action, "container")).has_value()) << action;
  }
  EXPECT_FALSE(shim::events::ToCriEvent(Event("start", "")).has_value());           // not a CRI container
  EXPECT_FALSE(shim::events::ToCriEvent(Event("start", "other")).has_value());
  EXPECT_FALSE(shim::events::ToCriEvent(Event("start", "container", "")).has_value());  // no pod
  DockerEvent network = Event("create", "container");
  network.type = "network";
  EXPECT_FALSE(shim::events::ToCriEvent(network).has_value());
}

}  // namespace
