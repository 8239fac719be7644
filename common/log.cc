#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log_context.h"

namespace common {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::atomic<bool> g_trace_calls{false};
thread_local const LogContext* t_context = nullptr;

// IDs are shortened as docker ps shows them (crictl takes any unique prefix).
std::string_view Short(std::string_view id) { return id.size() == 64 ? id.substr(0, 12) : id; }

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }
LogLevel GetLogLevel() { return g_level; }

bool ParseLogLevel(std::string_view text, LogLevel* out) {
  if (text == "debug" || text == "trace") *out = LogLevel::kDebug;
  else if (text == "info") *out = LogLevel::kInfo;
  else if (text == "warn" || text == "warning") *out = LogLevel::kWarning;
  else if (text == "error" || text == "fatal" || text == "panic") *out = LogLevel::kError;
  else return false;
  return true;
}

LogLine::LogLine(LogLevel level, const char* file, int line) : level_(level) {
  const char* base = std::strrchr(file, '/');
  stream_ << absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()) << ' '
          << LevelName(level) << ' ' << (base ? base + 1 : file) << ':' << line << "] ";
  if (const LogContext* c = t_context) {
    stream_ << '[' << c->rpc;
    if (!c->pod.empty()) stream_ << " pod=" << Short(c->pod);
    if (!c->container.empty()) stream_ << " container=" << Short(c->container);
    stream_ << "] ";
  }
}

LogLine::~LogLine() {
  stream_ << '\n';
  const std::string text = stream_.str();
  // One write call per line keeps concurrent lines whole.
  std::fwrite(text.data(), 1, text.size(), stderr);
  (void)level_;
}

ScopedLogContext::ScopedLogContext(LogContext context) : context_(std::move(context)), previous_(t_context) {
  t_context = &context_;
}

ScopedLogContext::~ScopedLogContext() { t_context = previous_; }

const LogContext* CurrentLogContext() { return t_context; }

void SetTraceCalls(bool on) { g_trace_calls = on; }
bool TraceCalls() { return g_trace_calls; }

}  // namespace common
