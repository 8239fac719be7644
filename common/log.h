#pragma once
// Leveled logging to stderr: `LOG_INFO << "x=" << x;`. Thread-safe per line.
#include <sstream>
#include <string_view>

namespace common {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug", "info", "warn"/"warning", "error" (also cri-dockerd's "fatal"/"panic" as error).
bool ParseLogLevel(std::string_view text, LogLevel* out);

class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  template <typename T>
  LogLine& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace common

// A one-shot loop rather than if/else, so an unbraced `if (x) LOG_INFO << ...;`
// has no dangling else.
#define DS_LOG(level)                                                                                   \
  for (bool _ds_log_once = ::common::LogLevel::level >= ::common::GetLogLevel(); _ds_log_once;          \
       _ds_log_once = false)                                                                           \
  ::common::LogLine(::common::LogLevel::level, __FILE__, __LINE__)
#define LOG_DEBUG DS_LOG(kDebug)
#define LOG_INFO DS_LOG(kInfo)
#define LOG_WARN DS_LOG(kWarning)
#define LOG_ERROR DS_LOG(kError)
