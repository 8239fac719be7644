#include "streaming/session_env.h"

#include <boost/asio/post.hpp>

#include "observability/hooks.h"

namespace streaming {

uint64_t SessionRegistry::Add(boost::asio::any_io_executor strand, std::function<void()> shutdown,
                              const char* kind) {
  if (kind != nullptr) observability::StreamingSessionStarted(kind);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  // A connection mid-upgrade when the server stops registers its session late; it
  // must end too (an exec is abandoned), not linger until the server is destroyed.
  if (shutting_down_) boost::asio::post(strand, shutdown);
  sessions_.emplace(id, Entry{std::move(strand), std::move(shutdown), kind});
  return id;
}

void SessionRegistry::Remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (it->second.kind != nullptr) observability::StreamingSessionEnded(it->second.kind);
  sessions_.erase(it);
  if (sessions_.empty()) empty_.notify_all();
}

bool SessionRegistry::ShutdownAll(absl::Duration grace) {
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  for (auto& [id, entry] : sessions_) boost::asio::post(entry.strand, entry.shutdown);
  return empty_.wait_for(lock, absl::ToChronoNanoseconds(grace), [this] { return sessions_.empty(); });
}

std::size_t SessionRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace streaming
