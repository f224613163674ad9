// Copyright 2026 The memtrace Authors.

#include "transport/event.h"

namespace memtrace {

const char* EventKindName(EventKind kind) noexcept {
  switch (kind) {
    case EventKind::kAlloc: return "alloc";
    case EventKind::kResize: return "resize";
    case EventKind::kRemap: return "remap";
    case EventKind::kRemapTarget: return "remap_target";
    case EventKind::kFree: return "free";
    case EventKind::kScopeEnter: return "scope_enter";
    case EventKind::kScopeExit: return "scope_exit";
    case EventKind::kCensusUpdate: return "census_update";
    case EventKind::kIntervalBegin: return "interval_begin";
    case EventKind::kIntervalEnd: return "interval_end";
    case EventKind::kArenaReset: return "arena_reset";
    case EventKind::kStackFrames: return "stack_frames";
    case EventKind::kThreadStart: return "thread_start";
    case EventKind::kInvalid: break;
  }
  return "invalid";
}

}  // namespace memtrace
