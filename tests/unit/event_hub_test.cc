// The events hub against a scripted dockerd on a unix socket: one Docker stream fans
// out to every subscriber, a subscriber that falls behind is dropped alone, and a
// broken stream resumes from the last event's time without duplicates.
#include "shim/events/event_hub.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "shim/logs/cri_log.h"
#include "tests/unit/eventually.h"
#include "tests/unit/fake_docker_client.h"
#include "shim/view/container_view.h"
#include "tests/unit/test_http_server.h"

namespace shim::events {
namespace {

using testutil::Eventually;

namespace v1 = runtime::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr absl::Duration kWait = absl::Seconds(10);

// Event times after the hub's first subscription (it follows Docker from then on).
const int64_t kBase = absl::ToUnixNanos(absl::Now()) + 3600 * int64_t{1000000000};

std::string EventLine(const std::string& id, const std::string& action, int64_t nanos,
                      const std::string& kind = "container") {
  return absl::StrCat(R"({"Type":"container","Action":")", action, R"(","Actor":{"ID":")", id,
                      R"(","Attributes":{"io.kubernetes.docker.type":")", kind,
                      R"(","io.kubernetes.sandbox.id":"s1","name":"k8s_app_p_ns_u_0"}},"timeNano":)", nanos, "}\n");
}

// What a subscriber received, popped on every wake-up.
struct Collector {
  std::mutex mu;
  std::vector<std::string> events;  // "<id> <type>"
  std::optional<absl::Status> end;
  std::shared_ptr<Subscription> subscription;
  bool paused = false;  // a subscriber that never reads

  void Drain() {
    std::lock_guard lock(mu);
    if (paused || !subscription) return;
    for (;;) {
      Subscription::Next next = subscription->Pop();
      if (next.event) {
        events.push_back(absl::StrCat(next.event->container_id(), " ",
                                      v1::ContainerEventType_Name(next.event->container_event_type())));
        continue;
      }
      if (next.end) end = next.end;
      return;
    }
  }
  std::vector<std::string> Events() {
    std::lock_guard lock(mu);
    return events;
  }
  std::optional<absl::Status> End() {
    std::lock_guard lock(mu);
    return end;
  }
};

class EventHubTest : public ::testing::Test {
 protected:
  void SetUp() override { docker_.version.api_version = "1.41"; }
  void TearDown() override { go_ = true; }  // a test that failed early must not leave a script waiting

  // Serves each events request with `script(fd, index)`; records the request targets.
  void Serve(std::function<void(int fd, int index)> script, std::size_t queue_limit = 1000,
             Follower* follower = nullptr, EventHub::Listener listener = nullptr) {
    server_ = std::make_unique<testhttp::UnixHttpServer>([this, script](int fd, int index) {
      std::string buffer;
      auto request = testhttp::ReadRequest(fd, buffer);
      if (!request) return;
      {
        std::lock_guard<std::mutex> lock(mu_);
        targets_.push_back(request->target);
      }
      script(fd, index);
    });
    HubOptions options;
    options.docker_socket_path = server_->path();
    options.queue_limit = queue_limit;
    options.retry_min = absl::Milliseconds(20);
    options.retry_max = absl::Milliseconds(100);
    hub_ = std::make_unique<EventHub>(
        docker_, options,
        [this](const CriEvent& e) {
          if (build_hook_) build_hook_(e);
          ++built_;
          v1::ContainerEventResponse resp;
          resp.set_container_id(e.container_id);
          resp.set_container_event_type(e.type);
          resp.set_created_at(e.created_at);
          return resp;
        },
        follower, std::move(listener));
  }

  // The collector lives as long as the hub, whose wake-ups reach it until Stop.
  Collector* Subscribe() {
    Collector* raw = collectors_.emplace_back(std::make_unique<Collector>()).get();
    auto subscription = hub_->Subscribe([raw] { raw->Drain(); });
    {
      std::lock_guard lock(raw->mu);
      raw->subscription = subscription;
    }
    raw->Drain();
    return raw;
  }

  std::vector<std::string> Targets() {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }

  // Keeps the connection open until the hub closes it.
  static void Hold(int fd) {
    char c;
    while (::read(fd, &c, 1) > 0) {
    }
  }

  // Declared before the server and the hub, whose threads use them until those are
  // destroyed (members go in reverse order).
  testing_fakes::FakeDockerClient docker_;
  std::mutex mu_;
  std::vector<std::string> targets_;
  std::atomic<int> built_{0};
  std::function<void(const CriEvent&)> build_hook_;  // set before Serve
  std::atomic<bool> go_{false};                        // what a script may wait for
  std::unique_ptr<testhttp::UnixHttpServer> server_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  std::unique_ptr<EventHub> hub_;
};

TEST_F(EventHubTest, FansOutEveryCriEventToEverySubscriber) {
  Serve([&](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    while (!go_) absl::SleepFor(absl::Milliseconds(1));
    // Split mid-line, with a malformed line and events that are not the CRI's.
    const std::string body =
        absl::StrCat(EventLine("c1", "create", kBase + 1), "{not json\n", EventLine("c1", "exec_create: sh", kBase + 2),
                     EventLine("c1", "start", kBase + 3), EventLine("x1", "start", kBase + 4, "other"),
                     EventLine("s1", "die", kBase + 5, "podsandbox"));
    testhttp::WriteAll(fd, testhttp::Chunk(body.substr(0, 50)));
    testhttp::WriteAll(fd, testhttp::Chunk(body.substr(50)));
    Hold(fd);
  });
  auto a = Subscribe(), b = Subscribe(), c = Subscribe();
  go_ = true;
  for (Collector* s : {a, b, c}) {
    EXPECT_TRUE(Eventually([&] { return s->Events().size() == 3; }));
    EXPECT_THAT(s->Events(), ElementsAre("c1 CONTAINER_CREATED_EVENT", "c1 CONTAINER_STARTED_EVENT",
                                         "s1 CONTAINER_STOPPED_EVENT"));
  }
  EXPECT_EQ(built_, 3);  // once per event, not per subscriber
  ASSERT_EQ(Targets().size(), 1u);  // one Docker stream for all
  EXPECT_THAT(Targets()[0], HasSubstr("/v1.41/events?filters="));
  EXPECT_THAT(Targets()[0], HasSubstr("%22type%22%3A%5B%22container%22%5D"));
  EXPECT_THAT(Targets()[0], HasSubstr("%22label%22%3A%5B%22io.kubernetes.docker.type%22%5D"));
  EXPECT_THAT(Targets()[0], HasSubstr("&since="));
  hub_->Stop();
  EXPECT_TRUE(Eventually([&] { return a->End().has_value(); }));
  EXPECT_TRUE(absl::IsUnavailable(*a->End())) << *a->End();
}

TEST_F(EventHubTest, DropsASubscriberThatFallsBehindAndKeepsTheOthers) {
  constexpr int kEvents = 20;
  Serve(
      [&](int fd, int) {
        testhttp::WriteAll(fd, testhttp::kChunkedOk);
        while (!go_) absl::SleepFor(absl::Milliseconds(1));
        for (int i = 0; i < kEvents; ++i) {
          testhttp::WriteAll(fd, testhttp::Chunk(EventLine(absl::StrCat("c", i), "start", kBase + i)));
        }
        Hold(fd);
      },
      /*queue_limit=*/5);
  auto fast = Subscribe(), slow = Subscribe();
  {
    std::lock_guard lock(slow->mu);
    slow->paused = true;
  }
  go_ = true;
  EXPECT_TRUE(Eventually([&] { return fast->Events().size() == kEvents; })) << fast->Events().size();
  EXPECT_FALSE(fast->End().has_value());
  {
    std::lock_guard lock(slow->mu);
    slow->paused = false;
  }
  slow->Drain();
  ASSERT_TRUE(slow->End().has_value());
  EXPECT_TRUE(absl::IsResourceExhausted(*slow->End())) << *slow->End();
  EXPECT_THAT(slow->End()->message(), HasSubstr("fell behind by 5 events"));
  EXPECT_TRUE(slow->Events().empty());  // what it had queued went with it
  // A new subscriber after the drop still gets events on the same stream.
  EXPECT_EQ(Targets().size(), 1u);
}

TEST_F(EventHubTest, ResumesABrokenStreamFromTheLastEventWithoutDuplicates) {
  Serve([&](int fd, int index) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    if (index == 0) {
      // c3's event is stamped before c1's start but sent after it, as dockerd may.
      testhttp::WriteAll(fd, testhttp::Chunk(EventLine("c1", "create", kBase + 100) + EventLine("c1", "start", kBase + 200) +
                                   EventLine("c3", "start", kBase + 150)));
      return;  // dockerd goes away: the connection closes mid-stream
    }
    // From a second before the newest: what was seen comes again, with one the hub
    // has not seen.
    testhttp::WriteAll(fd, testhttp::Chunk(EventLine("c1", "create", kBase + 100) + EventLine("c3", "start", kBase + 150) +
                                 EventLine("c1", "start", kBase + 200) + EventLine("c2", "start", kBase + 200) +
                                 EventLine("c1", "die", kBase + 300)));
    Hold(fd);
  });
  auto s = Subscribe();
  EXPECT_TRUE(Eventually([&] { return s->Events().size() == 5; })) << s->Events().size();
  EXPECT_THAT(s->Events(), ElementsAre("c1 CONTAINER_CREATED_EVENT", "c1 CONTAINER_STARTED_EVENT",
                                       "c3 CONTAINER_STARTED_EVENT", "c2 CONTAINER_STARTED_EVENT",
                                       "c1 CONTAINER_STOPPED_EVENT"));
  ASSERT_EQ(Targets().size(), 2u);
  EXPECT_THAT(Targets()[1], HasSubstr(absl::StrCat("&since=", logs::SinceParameter(kBase + 200 - 1000000000))));
  EXPECT_FALSE(s->End().has_value());  // the subscriber never noticed
}

TEST_F(EventHubTest, RetriesWhileDockerIsDown) {
  docker_.FailOperation("Ping", absl::UnavailableError("docker is down"));
  Serve([&](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(EventLine("c1", "create", kBase + 1)));
    Hold(fd);
  });
  auto s = Subscribe();
  absl::SleepFor(absl::Milliseconds(200));  // a few retries at 20, 40, 80 ms
  EXPECT_TRUE(s->Events().empty());
  docker_.ClearFailures();
  EXPECT_TRUE(Eventually([&] { return s->Events().size() == 1; }));
  EXPECT_EQ(Targets().size(), 1u);
}

TEST_F(EventHubTest, StopCancelsAPingThatDockerDoesNotAnswer) {
  std::atomic<bool> pinging{false}, cancelled{false};
  docker_.on_ping = [&](const common::Context& ctx) {
    pinging = true;
    while (!ctx.Cancelled() && !ctx.Expired()) absl::SleepFor(absl::Milliseconds(5));
    cancelled = ctx.Cancelled();
  };
  Serve([&](int fd, int) { Hold(fd); });
  auto s = Subscribe();
  ASSERT_TRUE(Eventually([&] { return pinging.load(); }));
  hub_->Stop();
  EXPECT_TRUE(cancelled) << "Stop waited for the Ping's own deadline";
  ASSERT_TRUE(s->End().has_value());
}

TEST_F(EventHubTest, SubscribingAfterStopEndsAtOnce) {
  Serve([&](int fd, int) { Hold(fd); });
  hub_->Stop();
  auto s = Subscribe();
  ASSERT_TRUE(s->End().has_value());
  EXPECT_TRUE(absl::IsUnavailable(*s->End()));
}

TEST_F(EventHubTest, StreamsBeyondTheMaximumEndAtOnceResourceExhausted) {
  Serve([&](int fd, int) { Hold(fd); });
  std::vector<Collector*> open;
  for (int i = 0; i < 128; ++i) open.push_back(Subscribe());
  for (Collector* c : open) EXPECT_FALSE(c->End().has_value());
  auto refused = Subscribe();
  ASSERT_TRUE(refused->End().has_value());
  EXPECT_TRUE(absl::IsResourceExhausted(*refused->End())) << *refused->End();
  EXPECT_THAT(std::string(refused->End()->message()), ::testing::HasSubstr("at most 128"));
  hub_->Unsubscribe(open.front()->subscription);
  auto next = Subscribe();
  EXPECT_FALSE(next->End().has_value()) << "room again once one left";
}

// A follower that records what the hub hands it.
struct RecordingFollower : Follower {
  std::mutex mu;
  std::vector<std::string> seen;  // "<id> <action>"
  int reconciles = 0;
  void OnEvent(const dockerclient::DockerEvent& e) override {
    std::lock_guard lock(mu);
    seen.push_back(absl::StrCat(e.id, " ", e.action));
  }
  absl::StatusOr<std::vector<dockerclient::DockerEvent>> Reconcile() override {
    std::lock_guard lock(mu);
    ++reconciles;
    return std::vector<dockerclient::DockerEvent>();
  }
  void OnStreamDown() override {}
  std::vector<std::string> Seen() {
    std::lock_guard lock(mu);
    return seen;
  }
};

TEST_F(EventHubTest, AFollowerIsFedFromTheStartAndNothingIsBuiltWithoutSubscribers) {
  RecordingFollower follower;
  Serve(
      [&](int fd, int) {
        testhttp::WriteAll(fd, testhttp::kChunkedOk);
        testhttp::WriteAll(fd, testhttp::Chunk(EventLine("c1", "create", kBase + 1) + EventLine("c1", "exec_start: sh", kBase + 2)));
        Hold(fd);
      },
      1000, &follower);
  EXPECT_TRUE(Eventually([&] { return follower.Seen().size() == 2; }));
  EXPECT_THAT(follower.Seen(), ElementsAre("c1 create", "c1 exec_start: sh"));
  EXPECT_EQ(follower.reconciles, 1);  // when the stream opened
  EXPECT_EQ(Targets().size(), 1u);
  EXPECT_EQ(built_, 0);
  hub_->Stop();  // before the follower goes
}

// What a listener was told: "<id> <type>".
struct Heard {
  std::mutex mu;
  std::vector<std::string> events;
  EventHub::Listener Listener() {
    return [this](const CriEvent& e) {
      std::lock_guard lock(mu);
      events.push_back(absl::StrCat(e.container_id, " ", v1::ContainerEventType_Name(e.type)));
    };
  }
  std::vector<std::string> Events() {
    std::lock_guard lock(mu);
    return events;
  }
};

TEST_F(EventHubTest, AListenerGetsEachCriEventFromTheStartWithoutSubscribers) {
  Heard heard;
  Serve(
      [&](int fd, int) {
        testhttp::WriteAll(fd, testhttp::kChunkedOk);
        testhttp::WriteAll(fd, testhttp::Chunk(EventLine("c1", "create", kBase + 1) + EventLine("c1", "exec_start: sh", kBase + 2) +
                                     EventLine("c1", "start", kBase + 3) + EventLine("c1", "start", kBase + 3)));
        Hold(fd);
      },
      1000, nullptr, heard.Listener());
  EXPECT_TRUE(Eventually([&] { return heard.Events().size() >= 2; }));
  absl::SleepFor(absl::Milliseconds(100));  // a duplicate would come meanwhile
  EXPECT_THAT(heard.Events(), ElementsAre("c1 CONTAINER_CREATED_EVENT", "c1 CONTAINER_STARTED_EVENT"));
  EXPECT_EQ(built_, 0);
  hub_->Stop();  // before the listener goes
}

// A follower whose first list finds a start that no event told.
struct MissedStartFollower : Follower {
  void OnEvent(const dockerclient::DockerEvent&) override {}
  absl::StatusOr<std::vector<dockerclient::DockerEvent>> Reconcile() override {
    dockerclient::DockerEvent start;
    start.type = "container";
    start.action = "start";
    start.id = "c2";
    start.attributes = {{"io.kubernetes.docker.type", "container"}, {"io.kubernetes.sandbox.id", "s1"}};
    start.time_nano = kBase;
    return std::vector<dockerclient::DockerEvent>{start};
  }
  void OnStreamDown() override {}
};

TEST_F(EventHubTest, AListenerGetsTheEventsAReconcileStoodInFor) {
  Heard heard;
  MissedStartFollower follower;
  Serve(
      [&](int fd, int) {
        testhttp::WriteAll(fd, testhttp::kChunkedOk);
        Hold(fd);
      },
      1000, &follower, heard.Listener());
  EXPECT_TRUE(Eventually([&] { return !heard.Events().empty(); }));
  EXPECT_THAT(heard.Events(), ElementsAre("c2 CONTAINER_STARTED_EVENT"));
  hub_->Stop();
}

TEST_F(EventHubTest, AFollowerGetsEventsWhileAPayloadIsBeingBuilt) {
  RecordingFollower follower;
  std::atomic<bool> release{false};
  build_hook_ = [&](const CriEvent&) {
    while (!release) absl::SleepFor(absl::Milliseconds(1));  // a slow status read (a log drain wait)
  };
  Serve(
      [&](int fd, int) {
        testhttp::WriteAll(fd, testhttp::kChunkedOk);
        while (!go_) absl::SleepFor(absl::Milliseconds(1));
        testhttp::WriteAll(fd, testhttp::Chunk(EventLine("c1", "create", kBase + 1) + EventLine("c1", "start", kBase + 2) +
                                     EventLine("c1", "die", kBase + 3)));
        Hold(fd);
      },
      1000, &follower);
  auto s = Subscribe();
  go_ = true;
  EXPECT_TRUE(Eventually([&] { return follower.Seen().size() == 3; }));
  EXPECT_EQ(built_, 0);  // the first payload is still being built
  EXPECT_TRUE(s->Events().empty());
  release = true;
  EXPECT_TRUE(Eventually([&] { return s->Events().size() == 3; }));
  EXPECT_THAT(s->Events(), ElementsAre("c1 CONTAINER_CREATED_EVENT", "c1 CONTAINER_STARTED_EVENT",
                                       "c1 CONTAINER_STOPPED_EVENT"));
  release = true;
  hub_->Stop();  // before the follower and the hook's flag go
}

TEST_F(EventHubTest, AfterAReconnectSubscribersGetWhatDockerDidNotKeepOnce) {
  docker_.AddImage({"busybox:1.36"});
  const common::Context ctx = common::Context::WithTimeout(kWait);
  auto Create = [&](const std::string& name) {
    nlohmann::json body = {{"Image", "busybox:1.36"},
                           {"Labels", {{"io.kubernetes.docker.type", "container"}, {"io.kubernetes.sandbox.id", "s1"}}}};
    absl::StatusOr<std::string> id = docker_.CreateContainer(ctx, name, body);
    EXPECT_TRUE(id.ok()) << id.status();
    return *id;
  };
  const std::string a = Create("k8s_a_p_ns_u_0"), b = Create("k8s_b_p_ns_u_0");
  ASSERT_TRUE(docker_.StartContainer(ctx, a).ok());
  ASSERT_TRUE(docker_.StartContainer(ctx, b).ok());
  ASSERT_TRUE(docker_.StopContainer(ctx, b, {}).ok());

  view::ContainerView view(docker_);
  std::atomic<bool> broken{false}, resume{false};
  std::atomic<int64_t> a_died{0};
  Serve(
      [&](int fd, int index) {
        if (index == 0) {
          testhttp::WriteAll(fd, testhttp::kChunkedOk);
          while (!broken) absl::SleepFor(absl::Milliseconds(1));
          return;  // dockerd restarts
        }
        while (!resume) absl::SleepFor(absl::Milliseconds(1));
        testhttp::WriteAll(fd, testhttp::kChunkedOk);
        // What Docker kept of the outage (a's death; b's removal and c are lost), then a new event.
        testhttp::WriteAll(fd, testhttp::Chunk(EventLine(a, "die", a_died) + EventLine("e1", "start", kBase)));
        Hold(fd);
      },
      1000, &view);
  auto s = Subscribe();
  ASSERT_TRUE(Eventually([&] { return view.Live(); }));

  broken = true;
  ASSERT_TRUE(Eventually([&] { return !view.Live(); })) << "not trusted while the stream is down";
  ASSERT_TRUE(docker_.StopContainer(ctx, a, {}).ok());
  a_died = absl::ToUnixNanos(absl::Now());
  ASSERT_TRUE(docker_.RemoveContainer(ctx, b, true).ok());
  const std::string c = Create("k8s_c_p_ns_u_0");
  ASSERT_TRUE(docker_.StartContainer(ctx, c).ok());
  resume = true;

  ASSERT_TRUE(Eventually([&] { return s->Events().size() >= 5; })) << s->Events().size();
  absl::SleepFor(absl::Milliseconds(200));  // a duplicate would come meanwhile
  std::vector<std::string> got = s->Events();
  ASSERT_EQ(got.size(), 5u) << ::testing::PrintToString(got);
  EXPECT_EQ(got.back(), "e1 CONTAINER_STARTED_EVENT");
  got.pop_back();
  EXPECT_THAT(got, UnorderedElementsAre(a + " CONTAINER_STOPPED_EVENT", b + " CONTAINER_DELETED_EVENT",
                                        c + " CONTAINER_CREATED_EVENT", c + " CONTAINER_STARTED_EVENT"));
  EXPECT_TRUE(view.Live());
  EXPECT_EQ(Targets().size(), 2u);
  hub_->Stop();  // before the view goes
}

}  // namespace
}  // namespace shim::events
