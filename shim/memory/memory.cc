#include "shim/memory/memory.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/log.h"

namespace shim::memory {

void TuneMalloc() {
  mallopt(M_ARENA_MAX, 2);
  // Setting them turns off glibc's dynamic thresholds; 128 KiB are its defaults.
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
}

void ReleaseStartupPages() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  const std::string self(exe, static_cast<size_t>(n));
  std::ifstream maps("/proc/self/maps");
  std::string line;
  size_t released = 0;
  while (std::getline(maps, line)) {
    // "start-end perms offset dev inode path"; only the executable's code, which is
    // never written: its data and relocated pages must stay.
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() < 6 || fields[1] != "r-xp" || fields[5] != self) continue;
    std::vector<std::string> range = absl::StrSplit(fields[0], '-');
    uint64_t start = 0, end = 0;
    if (range.size() != 2 || !absl::SimpleHexAtoi(range[0], &start) || !absl::SimpleHexAtoi(range[1], &end)) continue;
    if (::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED) == 0) {
      released += end - start;
    } else {
      LOG_DEBUG << "madvise(MADV_DONTNEED) of " << fields[0] << ": " << std::strerror(errno);
    }
  }
  LOG_DEBUG << "released start-up code pages (" << (released >> 10) << " KiB mapped)";
}

namespace {

void TrimIfWorthIt() {
  if (::mallinfo2().fordblks >= HeapTrimmer::kTrimWorthBytes) ::malloc_trim(0);
}

}  // namespace

HeapTrimmer::HeapTrimmer(absl::Duration delay, absl::Duration interval, std::function<void()> trim)
    : delay_(delay),
      interval_(interval),
      trim_(trim ? std::move(trim) : TrimIfWorthIt),
      thread_([this] { Run(); }) {}

HeapTrimmer::~HeapTrimmer() { Stop(); }

void HeapTrimmer::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HeapTrimmer::NoteCallEnded() {
  {
    std::lock_guard lock(mu_);
    if (pending_) return;
    pending_ = true;
  }
  wake_.notify_one();
}

void HeapTrimmer::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return pending_ || stopping_; });
    // Calls of the same burst keep ending meanwhile: one trim covers them.
    if (wake_.wait_for(lock, absl::ToChronoNanoseconds(delay_), [this] { return stopping_; })) return;
    pending_ = false;
    lock.unlock();
    trim_();
    lock.lock();
    if (wake_.wait_for(lock, absl::ToChronoNanoseconds(interval_), [this] { return stopping_; })) return;
  }
}

}  // namespace shim::memory
