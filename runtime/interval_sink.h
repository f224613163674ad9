// Copyright 2026 The memtrace Authors.
//
// interval_sink.h: a pair of borrowed callbacks that report the beginning and the end of a
// phase, identified by a category byte.
//
// A Context (context.h) calls `begin` when one of its scopes is entered and `end` when it
// exits, synchronously, on the thread doing so, so that a frame timer or another
// profiler's zones can hang off memtrace's scopes. The callbacks and `user` are borrowed:
// they must stay valid while any Context holds the sink. An IntervalSpan is the same pair
// used directly, without a scope.
//
// Thread safety: the callbacks are called from every thread that enters a scope through a
// Context holding the sink; they must be safe for that.
//
// Example:
//   memtrace::IntervalSink timer{
//       .begin = [](void* u, uint8_t c) { static_cast<FrameTimer*>(u)->Begin(c); },
//       .end = [](void* u, uint8_t c) { static_cast<FrameTimer*>(u)->End(c); },
//       .user = &frame_timer};

#ifndef MEMTRACE_RUNTIME_INTERVAL_SINK_H_
#define MEMTRACE_RUNTIME_INTERVAL_SINK_H_

#include <cstdint>

namespace memtrace {

struct IntervalSink {
  void (*begin)(void* user, uint8_t category) = nullptr;
  void (*end)(void* user, uint8_t category) = nullptr;
  void* user = nullptr;
};

// Calls sink->begin now and sink->end when destroyed; inert for a null sink.
class IntervalSpan {
 public:
  IntervalSpan(const IntervalSink* sink, uint8_t category) noexcept
      : sink_(sink), category_(category) {
    if (sink_ != nullptr && sink_->begin != nullptr) sink_->begin(sink_->user, category_);
  }
  ~IntervalSpan() {
    if (sink_ != nullptr && sink_->end != nullptr) sink_->end(sink_->user, category_);
  }
  IntervalSpan(const IntervalSpan&) = delete;
  IntervalSpan& operator=(const IntervalSpan&) = delete;

 private:
  const IntervalSink* sink_;
  uint8_t category_;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERVAL_SINK_H_
