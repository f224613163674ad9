// Copyright 2026 The memtrace Authors.
//
// scope_table.h: interned scope names and scope paths, shared by the whole process.
//
// A scope name ("physics") is interned once, at its call site, into a ScopeName; after
// that, entering the scope does no string hashing. A scope *path* is a node in a tree:
// path 0 is the root "(unscoped)", and Child(parent, name) is the path one level below.
// Allocations are attributed to the innermost path in force, and PathString() gives the
// full path ("frame/physics/broadphase") to summaries.
//
// Path ids are dense, start at 1 below the root, and never change meaning in a process,
// so every recorder and every capture of the process agrees on them. The table is bounded
// (kMaxPaths); paths beyond the bound collapse into kOverflowPath, and overflowed() says
// how often.
//
// Thread safety: every method is thread-safe. Intern and Child take a mutex on a miss, so
// call them off the hot path (ScopeName does this once per call site; runtime/ keeps a
// small per-thread cache in front of Child).
//
// Example:
//   static const memtrace::ScopeName kPhysics("physics");
//   uint32_t path = ScopeTable::Global().Child(parent_path, kPhysics.id());

#ifndef MEMTRACE_RUNTIME_SCOPE_TABLE_H_
#define MEMTRACE_RUNTIME_SCOPE_TABLE_H_

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace memtrace {

class ScopeTable {
 public:
  static constexpr uint32_t kRootPath = 0;
  static constexpr uint32_t kMaxPaths = 1u << 20;
  static constexpr uint32_t kOverflowPath = kMaxPaths;  // "(other scopes)"

  // The process-wide table. Never destroyed (threads may record during exit).
  static ScopeTable& Global();

  // The id of `name` (interned on first use). Names may contain any bytes except '/'
  // which is replaced by '_' so that paths stay unambiguous.
  uint32_t InternName(std::string_view name);

  // The interned text of `name_id` (after the replacement above), valid for the table's
  // life: names are never moved once interned.
  const char* NameText(uint32_t name_id) const;

  // The path one level below `parent` named by `name_id`.
  uint32_t Child(uint32_t parent, uint32_t name_id);

  // Structure of a path; the root is its own parent.
  uint32_t Parent(uint32_t path) const;
  uint32_t Depth(uint32_t path) const;
  std::string Name(uint32_t path) const;        // the leaf name
  std::string PathString(uint32_t path) const;  // "a/b/c"; "(unscoped)" for the root

  // Number of paths, the root included.
  size_t size() const;
  uint64_t overflowed() const;

 private:
  ScopeTable();

  struct Node {
    uint32_t parent;
    uint32_t name_id;
    uint32_t depth;
  };

  mutable std::mutex mu_;
  std::deque<std::string> names_;  // a deque: NameText() pointers stay valid as it grows
  absl::flat_hash_map<std::string, uint32_t> name_ids_;
  std::vector<Node> nodes_;
  absl::flat_hash_map<uint64_t, uint32_t> children_;
  uint64_t overflowed_ = 0;
};

// A scope name interned once. Construct it as a function-local or namespace-scope static
// so that the string is hashed once per call site, never on the hot path.
class ScopeName {
 public:
  explicit ScopeName(std::string_view name) : id_(ScopeTable::Global().InternName(name)) {}
  uint32_t id() const noexcept { return id_; }

 private:
  uint32_t id_;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_SCOPE_TABLE_H_
