#pragma once
// One Docker events subscription shared by every GetContainerEvents stream. The hub
// owns one thread (an io_context) that follows Docker's events, turns each CRI event
// into a ContainerEventResponse once (the builder's Docker calls run on this thread;
// Docker holds the next events in the socket meanwhile) and queues it for every
// subscriber. A subscriber that lets `queue_limit` events pile up is dropped (its
// stream ends RESOURCE_EXHAUSTED) and never slows the others. A broken Docker stream
// (dockerd restarting) is resumed with backoff from about the last event's time, and
// the events Docker sends again are skipped.
#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/cri.h"
#include "dockerclient/docker_client.h"
#include "dockerclient/event_stream.h"
#include "shim/events/cri_event.h"

namespace shim::events {

using Event = std::shared_ptr<const runtime::v1::ContainerEventResponse>;

class Subscription {
 public:
  // `wake` is called on the hub's thread, without locks held, after an event was
  // queued or the subscription ended. It must not block; it may still be called
  // once after Unsubscribe returned.
  Subscription(std::size_t limit, std::function<void()> wake) : limit_(limit), wake_(std::move(wake)) {}

  struct Next {
    Event event;                     // null when none is queued
    std::optional<absl::Status> end; // set once nothing more will come
  };
  Next Pop();

 private:
  friend class EventHub;
  // False when the queue was full: the subscription ended RESOURCE_EXHAUSTED.
  bool Push(Event event);
  void End(absl::Status status);

  const std::size_t limit_;
  const std::function<void()> wake_;
  std::mutex mu_;
  std::deque<Event> queue_;          // guarded by mu_
  std::optional<absl::Status> end_;  // guarded by mu_
};

struct HubOptions {
  std::string docker_socket_path = "/var/run/docker.sock";
  std::size_t queue_limit = 1000;  // events per subscriber
  // Waits before reconnecting after the stream broke: doubling from min to max,
  // back to min once an event came through.
  absl::Duration retry_min = absl::Milliseconds(500);
  absl::Duration retry_max = absl::Seconds(30);
};

class EventHub {
 public:
  using Builder = std::function<runtime::v1::ContainerEventResponse(const CriEvent&)>;

  // `docker` answers the API version; `build` fills an event's statuses. Both must
  // outlive the hub. Docker is followed from the first Subscribe on.
  EventHub(dockerclient::DockerClient& docker, HubOptions options, Builder build);
  ~EventHub();  // Stop()
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // After Stop, the subscription has already ended (UNAVAILABLE).
  std::shared_ptr<Subscription> Subscribe(std::function<void()> wake);
  void Unsubscribe(const std::shared_ptr<Subscription>& subscription);
  // Ends every subscription (UNAVAILABLE), stops following Docker, joins the thread. Idempotent.
  void Stop();

 private:
  void Connect();
  void OnDockerEvent(dockerclient::DockerEvent event);
  void OnStreamEnd(absl::Status status);
  void Publish(const Event& event);
  // Once-per-event bookkeeping for resuming; false for an event already seen.
  bool IsNew(const dockerclient::DockerEvent& event);

  dockerclient::DockerClient& docker_;
  const HubOptions options_;
  const Builder build_;

  std::mutex mu_;
  std::vector<std::shared_ptr<Subscription>> subscribers_;  // guarded by mu_
  bool started_ = false, stopped_ = false;                  // guarded by mu_

  // Only touched on the thread.
  boost::asio::io_context ioc_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::steady_timer retry_;
  std::shared_ptr<dockerclient::EventStream> stream_;
  absl::Duration backoff_;
  int64_t first_nanos_ = 0;  // the first Subscribe: nothing before is wanted
  int64_t last_nanos_ = 0;   // the newest event's time
  std::map<int64_t, std::set<std::string>> recent_;  // id+action of the last second's events, by time
  bool halted_ = false;
  // Set by Stop before it waits for the thread: cancels a Ping in progress.
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace shim::events
