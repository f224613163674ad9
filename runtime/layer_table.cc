// Copyright 2026 The memtrace Authors.

#include "runtime/layer_table.h"

#include <new>

#include "absl/strings/str_cat.h"

namespace memtrace {

LayerTable& LayerTable::Global() {
  // Never destroyed: snapshots may be taken during static destruction.
  alignas(LayerTable) static unsigned char storage[sizeof(LayerTable)];
  static LayerTable* table = new (storage) LayerTable();
  return *table;
}

LayerTable::LayerTable() : names_(256) {
  names_[layers::kCpuHeap] = "cpu";
  names_[layers::kFrameArena] = "frame_arena";
  names_[layers::kGpuHeap] = "gpu";
  names_[layers::kCensus] = "census";
  names_[layers::kInterposer] = "interposer";
}

absl::StatusOr<LayerId> LayerTable::Register(std::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError("memtrace: a layer needs a non-empty name");
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t id = 0; id < names_.size(); ++id) {
    if (names_[id] == name) return static_cast<LayerId>(id);
  }
  for (size_t id = layers::kFirstUserLayer; id < names_.size(); ++id) {
    if (names_[id].empty()) {
      names_[id] = std::string(name);
      return static_cast<LayerId>(id);
    }
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "memtrace: cannot register layer '", std::string(name), "': all ",
      static_cast<uint64_t>(names_.size() - layers::kFirstUserLayer),
      " user layer ids are taken; reuse a layer name for allocators of the same kind"));
}

std::string LayerTable::Name(LayerId layer) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!names_[layer].empty()) return names_[layer];
  return absl::StrCat("layer", layer);
}

}  // namespace memtrace
