#pragma once
// Runtime calls block (they talk to dockerd); sessions make them on the server's
// worker threads and get the result back on their own strand.
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

namespace streaming {

// Runs `work()` on `workers`, then `done(result)` on `home`. `done` must keep alive
// what it needs (it usually holds a shared_ptr to its session). The workers count as
// busy until `done` has run, so that joining them (Server::Stop) also waits for what
// `done` hands back to them, such as abandoning a process that started too late.
template <typename Work, typename Done>
void RunBlocking(const boost::asio::any_io_executor& workers, boost::asio::any_io_executor home, Work work,
                 Done done) {
  auto busy = boost::asio::prefer(workers, boost::asio::execution::outstanding_work.tracked);
  boost::asio::post(workers, [home = std::move(home), busy = std::move(busy), work = std::move(work),
                              done = std::move(done)]() mutable {
    if constexpr (std::is_void_v<decltype(work())>) {
      work();
      boost::asio::post(home, [busy = std::move(busy), done = std::move(done)]() mutable { done(); });
    } else {
      auto result = work();
      boost::asio::post(home, [busy = std::move(busy), done = std::move(done), result = std::move(result)]() mutable {
        done(std::move(result));
      });
    }
  });
}

}  // namespace streaming
