#include "shim/network/netns_addresses.h"

#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/unique_fd.h"

namespace network {
namespace {

constexpr uint32_t kDumpSequence = 1;

absl::Status Errno(absl::string_view what, int err) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(err)));
}

// The address of one RTM_NEWADDR message as `ip addr` prints it: IFA_LOCAL (the
// interface's own address; IFA_ADDRESS is the peer's on point-to-point links), else
// IFA_ADDRESS. Empty when it has neither.
std::string AddressOf(const nlmsghdr* message, const ifaddrmsg* ifa) {
  const size_t size = ifa->ifa_family == AF_INET ? 4 : 16;
  const void* local = nullptr;
  const void* address = nullptr;
  int length = static_cast<int>(IFA_PAYLOAD(message));
  for (const rtattr* a = IFA_RTA(ifa); RTA_OK(a, length); a = RTA_NEXT(a, length)) {
    if (RTA_PAYLOAD(a) < size) continue;
    if (a->rta_type == IFA_LOCAL) local = RTA_DATA(a);
    if (a->rta_type == IFA_ADDRESS) address = RTA_DATA(a);
  }
  const void* chosen = local ? local : address;
  char text[INET6_ADDRSTRLEN] = {};
  if (chosen == nullptr || ::inet_ntop(ifa->ifa_family, chosen, text, sizeof text) == nullptr) return "";
  return text;
}

// In the calling thread's network namespace.
absl::StatusOr<std::vector<std::string>> ReadGlobalAddresses(const std::string& ifname) {
  const unsigned index = ::if_nametoindex(ifname.c_str());
  if (index == 0) {
    if (errno == ENODEV) return absl::NotFoundError(absl::StrCat("no interface ", ifname));
    return Errno(absl::StrCat("cannot look up interface ", ifname), errno);
  }
  common::UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd) return Errno("cannot open a netlink socket", errno);
  struct {
    nlmsghdr header;
    ifaddrmsg body;
  } request{};
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof(ifaddrmsg));
  request.header.nlmsg_type = RTM_GETADDR;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = kDumpSequence;
  request.body.ifa_family = AF_UNSPEC;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), &request, request.header.nlmsg_len, 0, reinterpret_cast<const sockaddr*>(&kernel),
               sizeof kernel) < 0)
    return Errno("cannot ask netlink for addresses", errno);

  std::vector<std::string> v4, v6;
  alignas(nlmsghdr) char buffer[32 * 1024];
  for (;;) {
    const ssize_t n = ::recv(fd.get(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read addresses from netlink", errno);
    if (n == 0) return absl::UnavailableError("netlink ended the address dump early");
    size_t left = static_cast<size_t>(n);
    for (auto* message = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(message, left);
         message = NLMSG_NEXT(message, left)) {
      if (message->nlmsg_seq != kDumpSequence) continue;
      if (message->nlmsg_type == NLMSG_DONE) {
        v4.insert(v4.end(), v6.begin(), v6.end());
        return v4;
      }
      if (message->nlmsg_type == NLMSG_ERROR) {
        const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(message));
        return Errno("netlink refused the address dump", -error->error);
      }
      if (message->nlmsg_type != RTM_NEWADDR) continue;
      const auto* ifa = static_cast<const ifaddrmsg*>(NLMSG_DATA(message));
      // `ip addr show scope global`: neither link-local (fe80::/10) nor host (loopback) scope.
      if (ifa->ifa_index != index || ifa->ifa_scope != RT_SCOPE_UNIVERSE) continue;
      if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) continue;
      if (std::string address = AddressOf(message, ifa); !address.empty())
        (ifa->ifa_family == AF_INET ? v4 : v6).push_back(std::move(address));
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> NetlinkAddressReader::GlobalAddresses(const std::string& netns_path,
                                                                               const std::string& ifname) {
  absl::StatusOr<std::vector<std::string>> addresses = absl::InternalError("not read");
  RETURN_IF_ERROR(netns_.Run(netns_path, [&] { addresses = ReadGlobalAddresses(ifname); }));
  if (!addresses.ok()) return common::Annotate(addresses.status(), absl::StrCat("network namespace ", netns_path));
  return addresses;
}

}  // namespace network
