#include "shim/events/event_hub.h"

#include <algorithm>
#include <future>
#include <utility>

#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "common/context.h"
#include "common/log.h"
#include "shim/logs/cri_log.h"
#include "shim/naming.h"

namespace shim::events {

namespace asio = boost::asio;

namespace {
constexpr absl::Duration kPingTimeout = absl::Seconds(5);
// dockerd stamps an event before it takes the lock that orders them, so events of
// different containers may come slightly out of time order: a resumed stream starts
// this much before the newest event seen, and what it sends again is recognised.
constexpr int64_t kResumeMarginNanos = 1000000000;
}  // namespace

Subscription::Next Subscription::Pop() {
  std::lock_guard lock(mu_);
  Next next;
  if (!queue_.empty()) {
    next.event = std::move(queue_.front());
    queue_.pop_front();
  } else {
    next.end = end_;
  }
  return next;
}

bool Subscription::Push(Event event) {
  bool queued = true;
  {
    std::lock_guard lock(mu_);
    if (end_) return false;
    if (queue_.size() < limit_) {
      queue_.push_back(std::move(event));
    } else {
      queued = false;
      queue_.clear();
      end_ = absl::ResourceExhaustedError(
          absl::StrCat("this GetContainerEvents stream fell behind by ", limit_, " events and was dropped"));
    }
  }
  wake_();
  return queued;
}

void Subscription::End(absl::Status status) {
  {
    std::lock_guard lock(mu_);
    if (end_) return;
    end_ = std::move(status);
  }
  wake_();
}

EventHub::EventHub(dockerclient::DockerClient& docker, HubOptions options, Builder build, Follower* follower,
                   Listener listener)
    : docker_(docker),
      options_(std::move(options)),
      build_(std::move(build)),
      follower_(follower),
      listener_(std::move(listener)),
      work_(asio::make_work_guard(ioc_)),
      retry_(ioc_),
      backoff_(options_.retry_min),
      reconcile_(ioc_),
      thread_([this] { ioc_.run(); }),
      builder_([this] { BuildLoop(); }) {
  if (follower_ || listener_) {
    std::lock_guard lock(mu_);
    Follow();
  }
}

EventHub::~EventHub() { Stop(); }

void EventHub::Follow() {
  started_ = true;
  // From now on: the events between now and the connection come from Docker's buffer.
  asio::post(ioc_, [this, now = absl::ToUnixNanos(absl::Now())] {
    first_nanos_ = last_nanos_ = now;
    Connect();
  });
}

std::shared_ptr<Subscription> EventHub::Subscribe(std::function<void()> wake) {
  auto subscription = std::make_shared<Subscription>(options_.queue_limit, std::move(wake));
  std::lock_guard lock(mu_);
  if (stopped_ || subscribers_.size() >= options_.max_subscribers) {
    std::lock_guard sub_lock(subscription->mu_);
    subscription->end_ = stopped_ ? absl::UnavailableError("dockershim is shutting down")
                                  : absl::ResourceExhaustedError(absl::StrCat(
                                        "dockershim serves at most ", options_.max_subscribers,
                                        " GetContainerEvents streams at once; close one first"));
    return subscription;
  }
  subscribers_.push_back(subscription);
  if (!started_) Follow();
  return subscription;
}

void EventHub::Unsubscribe(const std::shared_ptr<Subscription>& subscription) {
  std::lock_guard lock(mu_);
  std::erase(subscribers_, subscription);
}

void EventHub::Connect() {
  if (halted_) return;
  common::Context ping = common::Context::WithTimeout(kPingTimeout);
  ping.is_cancelled = [this] { return stopping_.load(); };
  absl::StatusOr<std::string> api = docker_.Ping(ping);
  if (!api.ok()) return OnStreamEnd(api.status());
  dockerclient::EventStreamOptions options;
  options.socket_path = options_.docker_socket_path;
  options.api_version = *api;
  options.labels = {kContainerTypeLabel};
  // What Docker sends again (its `since` is inclusive) is skipped by IsNew.
  options.since = logs::SinceParameter(std::max(first_nanos_, last_nanos_ - kResumeMarginNanos));
  stream_ = std::make_shared<dockerclient::EventStream>(
      ioc_.get_executor(), options, [this](dockerclient::DockerEvent event) { OnDockerEvent(std::move(event)); },
      [this](absl::Status status) { OnStreamEnd(std::move(status)); });
  // Subscribed first, listed next: whatever happens after the list comes as events
  // (read once the list returns), and whatever happened before is in the list.
  if (follower_) stream_->OnOpen([this] { Reconcile(); });
  stream_->Start();
}

void EventHub::Reconcile() {
  if (halted_ || !stream_) return;
  absl::StatusOr<std::vector<dockerclient::DockerEvent>> missed = follower_->Reconcile();
  if (!missed.ok()) {
    LOG_WARN << "Docker events: cannot list the containers to compare: " << missed.status().message();
    stream_->Cancel();  // reconnects, and lists again, after the backoff
    return;
  }
  if (!missed->empty()) {
    LOG_INFO << "Docker events: " << missed->size() << " lifecycle event(s) were missed; sending them from the list";
  }
  // What an earlier list stood for has been replayed by now, if ever.
  synthesized_.clear();
  for (const dockerclient::DockerEvent& e : *missed) {
    std::optional<CriEvent> cri = ToCriEvent(e);
    if (!cri) continue;
    Synthesized& s = synthesized_[cri->container_id];
    s.listed_at = e.time_nano;
    s.types.insert(cri->type);
    Dispatch(*std::move(cri));
  }
  reconcile_.expires_after(absl::ToChronoNanoseconds(options_.reconcile_period));
  reconcile_.async_wait([this](boost::system::error_code ec) {
    if (!ec) Reconcile();
  });
}

bool EventHub::IsNew(const dockerclient::DockerEvent& event) {
  last_nanos_ = std::max(last_nanos_, event.time_nano);
  const bool added = recent_[event.time_nano].insert(absl::StrCat(event.id, " ", event.action)).second;
  // Only the events a resumed stream can send again are remembered.
  recent_.erase(recent_.begin(), recent_.lower_bound(last_nanos_ - kResumeMarginNanos));
  return added;
}

void EventHub::OnDockerEvent(dockerclient::DockerEvent event) {
  if (halted_ || !IsNew(event)) return;
  backoff_ = options_.retry_min;
  if (follower_) follower_->OnEvent(event);
  std::optional<CriEvent> cri = ToCriEvent(event);
  if (!cri) return;
  if (auto it = synthesized_.find(cri->container_id);
      it != synthesized_.end() && cri->created_at <= it->second.listed_at && it->second.types.erase(cri->type) > 0) {
    return;  // already sent, from the list
  }
  Dispatch(*std::move(cri));
}

void EventHub::Dispatch(CriEvent event) {
  if (listener_) listener_(event);
  std::vector<std::shared_ptr<Subscription>> dropped;
  {
    std::lock_guard lock(mu_);
    if (subscribers_.empty() || stopped_) return;  // nobody to build it for
    if (pending_.size() < options_.pending_limit) {
      pending_.push_back(std::move(event));
      pending_cv_.notify_one();
      return;
    }
    // Statuses cannot be read as fast as Docker's events come: every subscriber would
    // fall behind that far.
    dropped.swap(subscribers_);
    pending_.clear();
  }
  LOG_WARN << "GetContainerEvents: " << options_.pending_limit << " events wait for their statuses; dropping "
           << dropped.size() << " stream(s)";
  for (const auto& subscriber : dropped) {
    subscriber->End(absl::ResourceExhaustedError(absl::StrCat(
        "dockershim fell behind by ", options_.pending_limit, " events reading their statuses; this stream was dropped")));
  }
}

void EventHub::BuildLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    pending_cv_.wait(lock, [this] { return stopped_ || !pending_.empty(); });
    if (stopped_) return;
    CriEvent event = std::move(pending_.front());
    pending_.pop_front();
    if (subscribers_.empty()) continue;  // the last one left meanwhile
    lock.unlock();
    Publish(std::make_shared<const runtime::v1::ContainerEventResponse>(build_(event)));
    lock.lock();
  }
}

void EventHub::Publish(const Event& event) {
  std::vector<std::shared_ptr<Subscription>> subscribers;
  {
    std::lock_guard lock(mu_);
    subscribers = subscribers_;
  }
  // Pushed without the hub's lock: a wake may take the subscriber's own locks.
  std::vector<std::shared_ptr<Subscription>> dropped;
  for (const auto& subscriber : subscribers) {
    if (!subscriber->Push(event)) dropped.push_back(subscriber);
  }
  if (dropped.empty()) return;
  LOG_WARN << dropped.size() << " GetContainerEvents stream(s) fell behind by " << options_.queue_limit
           << " events; dropped";
  std::lock_guard lock(mu_);
  std::erase_if(subscribers_, [&](const auto& s) { return std::count(dropped.begin(), dropped.end(), s) > 0; });
}

void EventHub::OnStreamEnd(absl::Status status) {
  stream_.reset();
  reconcile_.cancel();
  if (halted_) return;
  if (follower_) follower_->OnStreamDown();
  LOG_WARN << "Docker events: " << (status.ok() ? "the stream ended" : status.message()) << "; following again in "
           << backoff_;
  retry_.expires_after(absl::ToChronoNanoseconds(backoff_));
  retry_.async_wait([this](boost::system::error_code ec) {
    if (!ec) Connect();
  });
  backoff_ = std::min(backoff_ * 2, options_.retry_max);
}

void EventHub::Stop() {
  std::vector<std::shared_ptr<Subscription>> subscribers;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    subscribers.swap(subscribers_);
    pending_.clear();
  }
  stopping_ = true;
  pending_cv_.notify_all();
  std::promise<void> done;
  asio::post(ioc_, [this, &done] {
    halted_ = true;
    retry_.cancel();
    reconcile_.cancel();
    if (stream_) stream_->Cancel();
    done.set_value();
  });
  done.get_future().wait();
  builder_.join();  // after the payload being built, if any
  for (const auto& subscriber : subscribers) subscriber->End(absl::UnavailableError("dockershim is shutting down"));
  work_.reset();
  ioc_.stop();
  thread_.join();
}

}  // namespace shim::events
