// Copyright 2026 The memtrace Authors.
//
// std_container_frames.h: functions that allocate only through container libraries (a
// vector's growth, std::make_shared, a map's nodes, an absl::flat_hash_map's table),
// built at -O2 with full debug
// information (-g2) so that the library's inline functions are inlined frames as in a
// release build. For preload_target's `std-containers` mode and
// preload_stacks_and_names_test, which check that site names pass over the library's frames
// to these functions.

#ifndef MEMTRACE_TESTS_STD_CONTAINER_FRAMES_H_
#define MEMTRACE_TESTS_STD_CONTAINER_FRAMES_H_

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace memtrace_std_test {

struct Particle {
  double position[3];
  double velocity[3];
};

extern const int kPushBackLine;   // GrowParticles()'s call of push_back
extern const int kMakeSharedLine;  // MakeParticle()'s call of std::make_shared
extern const int kMapInsertLine;  // FillMap()'s call of std::map::operator[]
extern const int kHashMapInsertLine;  // FillHashMap()'s call of flat_hash_map's operator[]

// n particles, pushed back one at a time (the vector grows by doubling).
std::vector<Particle> GrowParticles(size_t n);

std::shared_ptr<Particle> MakeParticle();

// A map of n entries, inserted one at a time with operator[].
std::map<int, int> FillMap(int n);

// An absl::flat_hash_map of n entries, inserted one at a time with operator[] (its table
// grows as it fills).
absl::flat_hash_map<int, int> FillHashMap(int n);

}  // namespace memtrace_std_test

#endif  // MEMTRACE_TESTS_STD_CONTAINER_FRAMES_H_
