#pragma once
// One Docker events subscription shared by every GetContainerEvents stream and the
// container view. The hub's thread (an io_context) reads Docker's events and hands
// each one at once to the Follower (the view), if any; CRI events go to a second
// thread that builds each ContainerEventResponse once (its Docker calls and log-drain
// waits never hold up the reading) and queues it for every subscriber, and only while
// there are subscribers. A subscriber that lets `queue_limit` events pile up is
// dropped (its stream ends RESOURCE_EXHAUSTED) and never slows the others. A broken
// Docker stream (dockerd restarting) is resumed with backoff from about the last
// event's time, and the events Docker sends again are skipped. Each time the stream
// opens (and every `reconcile_period`) the follower compares Docker's full list with
// what it knows; what changed unseen reaches subscribers as the events Docker would
// have sent, once: a replayed event that one of those already stood for is skipped.
// A listener (the CRI service's log copies) gets every CRI event on the hub's thread,
// subscribers or not.
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
#include <condition_variable>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/cri.h"
#include "dockerclient/docker_client.h"
#include "dockerclient/event_stream.h"
#include "shim/events/cri_event.h"
#include "shim/events/follower.h"

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
  // Streams at once (the kubelet holds one); more end at once RESOURCE_EXHAUSTED, so
  // that a client opening streams without end costs neither memory nor a push each.
  std::size_t max_subscribers = 128;
  // CRI events waiting for their statuses; beyond, every subscriber is dropped.
  std::size_t pending_limit = 10000;
  // Waits before reconnecting after the stream broke: doubling from min to max,
  // back to min once an event came through.
  absl::Duration retry_min = absl::Milliseconds(500);
  absl::Duration retry_max = absl::Seconds(30);
  // How often the follower checks its state against Docker's full list while the
  // stream stays open (it also does at every open).
  absl::Duration reconcile_period = absl::Minutes(1);
};

class EventHub {
 public:
  using Builder = std::function<runtime::v1::ContainerEventResponse(const CriEvent&)>;
  // Called on the hub's thread with each CRI event, Docker's or a reconcile's, once
  // (after the follower saw it); it holds up the reading while it runs.
  using Listener = std::function<void(const CriEvent&)>;

  // `docker` answers the API version; `build` fills an event's statuses; both (and
  // `follower`, if any) must outlive the hub. Docker is followed from the start with a
  // follower or a listener, else from the first Subscribe on.
  EventHub(dockerclient::DockerClient& docker, HubOptions options, Builder build, Follower* follower = nullptr,
           Listener listener = nullptr);
  ~EventHub();  // Stop()
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // After Stop, the subscription has already ended (UNAVAILABLE); with
  // max_subscribers streams open, RESOURCE_EXHAUSTED.
  std::shared_ptr<Subscription> Subscribe(std::function<void()> wake);
  void Unsubscribe(const std::shared_ptr<Subscription>& subscription);
  // Ends every subscription (UNAVAILABLE), stops following Docker, joins the thread. Idempotent.
  void Stop();

 private:
  void Follow();  // mu_ held
  void Connect();
  // The follower lists (at each open, then every reconcile_period); what it missed is dispatched.
  void Reconcile();
  void OnDockerEvent(dockerclient::DockerEvent event);
  void OnStreamEnd(absl::Status status);
  // Tells the listener, then queues `event` for the builder's thread, if anyone subscribed.
  void Dispatch(CriEvent event);
  void BuildLoop();
  void Publish(const Event& event);
  // Once-per-event bookkeeping for resuming; false for an event already seen.
  bool IsNew(const dockerclient::DockerEvent& event);

  dockerclient::DockerClient& docker_;
  const HubOptions options_;
  const Builder build_;
  Follower* const follower_;
  const Listener listener_;

  std::mutex mu_;
  std::condition_variable pending_cv_;
  std::vector<std::shared_ptr<Subscription>> subscribers_;  // guarded by mu_
  std::deque<CriEvent> pending_;                            // to build; guarded by mu_
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
  boost::asio::steady_timer reconcile_;
  // The events the last reconcile stood in for, by container: the same event from
  // Docker, stamped before that list, is not delivered again.
  struct Synthesized {
    int64_t listed_at = 0;
    std::set<int> types;  // ContainerEventType
  };
  std::map<std::string, Synthesized> synthesized_;
  bool halted_ = false;
  // Set by Stop before it waits for the thread: cancels a Ping in progress.
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::thread builder_;
};

}  // namespace shim::events
