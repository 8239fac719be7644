#pragma once
// The daemon's resident memory (docs/benchmarks.md, "Load bench and memory"): glibc malloc
// settings, start-up pages given back once serving, and heap pages given back after bursts
// of calls.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/time/time.h"

namespace shim::memory {

// First thing in main, before any thread starts: at most two malloc arenas (glibc
// gives each thread its own, up to 8 per core, each keeping its freed pages) and fixed
// trim/mmap thresholds (glibc raises them after large frees and then keeps memory).
void TuneMalloc();

// Once serving: unmaps the pages of the executable's code that were touched only to
// start (static initializers of gRPC, protobuf, ...). They stay in the page cache; what
// runs later maps its pages again on first use (a minor fault per 64 KiB).
void ReleaseStartupPages();

// Returns freed heap pages to the kernel (malloc_trim) once the calls of a burst have
// ended: `delay` after the first call that ended since the last trim, and at most
// once per `delay` + `interval`. One thread, waiting on a condition variable between.
// The default trim runs only when the heap holds at least kTrimWorthBytes free: at a
// steady trickle of calls (a relist a second) there is little to give back, and a
// trim costs a walk of the heap plus page faults when the next call grows it again.
// Even the check walks the heap's free lists (mallinfo2): with 100 pods, trimming every
// 3 s under the kubelet's calls took a tenth of the shim's CPU, hence the long interval.
class HeapTrimmer {
 public:
  static constexpr size_t kTrimWorthBytes = 1 << 20;
  // `trim` is the default (malloc_trim(0) when worth it) but in tests.
  explicit HeapTrimmer(absl::Duration delay = absl::Seconds(1), absl::Duration interval = absl::Seconds(30),
                       std::function<void()> trim = nullptr);
  ~HeapTrimmer();  // stops and joins
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  void Stop();
  void NoteCallEnded();

 private:
  void Run();

  const absl::Duration delay_, interval_;
  const std::function<void()> trim_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool pending_ = false;  // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace shim::memory
