// Copyright 2026 The memtrace Authors.

#include "runtime/snapshot.h"

namespace memtrace {

std::string DefaultLayerName(LayerId layer) {
  switch (layer) {
    case layers::kCpuHeap: return "cpu";
    case layers::kFrameArena: return "frame_arena";
    case layers::kGpuHeap: return "gpu";
    case layers::kCensus: return "census";
    case layers::kInterposer: return "interposer";
    default: return "layer" + std::to_string(layer);
  }
}

}  // namespace memtrace
