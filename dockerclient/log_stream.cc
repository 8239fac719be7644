#include "dockerclient/log_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace dockerclient {

LogStream::LogStream(boost::asio::any_io_executor executor, const LogStreamOptions& o, OnData on_data, OnEnd on_end) {
  std::string target = absl::StrCat("/v", o.api_version, "/containers/", o.container_id,
                                    "/logs?stdout=1&stderr=1&timestamps=1&follow=", o.follow ? 1 : 0);
  if (!o.since.empty()) absl::StrAppend(&target, "&since=", o.since);
  body_ = std::make_shared<BodyStream>(std::move(executor), o.socket_path, std::move(target),
                                       absl::StrCat("follow the log of container ", o.container_id),
                                       std::move(on_data), std::move(on_end));
}

}  // namespace dockerclient
