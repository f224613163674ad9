// Copyright 2026 The memtrace Authors.
//
// layer_table.h: names for layer ids, shared by the process.
//
// A layer says which allocator or source an operation came from ("cpu", "frame_arena",
// "gpu", ...). Ids 0-4 are fixed (transport/event.h), 5-15 reserved; Register() hands out
// ids 16-255, 240 in all, by name: registering a name twice returns the same id, so two tracers that both
// say "textures" share a layer.
//
// Thread safety: every method is thread-safe (a mutex; never on the hot path).

#ifndef MEMTRACE_RUNTIME_LAYER_TABLE_H_
#define MEMTRACE_RUNTIME_LAYER_TABLE_H_

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "transport/event.h"

namespace memtrace {

class LayerTable {
 public:
  static LayerTable& Global();

  // The id for `name`, registering it if new. Fails when all 240 user ids (16-255) are
  // taken or the name is empty.
  absl::StatusOr<LayerId> Register(std::string_view name);

  // The name of `layer` ("layer<N>" for an id never registered).
  std::string Name(LayerId layer) const;

 private:
  LayerTable();
  mutable std::mutex mu_;
  std::vector<std::string> names_;  // by id; empty = unused
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_LAYER_TABLE_H_
