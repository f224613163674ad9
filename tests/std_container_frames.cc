// Copyright 2026 The memtrace Authors.

#include "tests/std_container_frames.h"

namespace memtrace_std_test {

const int kPushBackLine = __LINE__ + 4;
__attribute__((noinline)) std::vector<Particle> GrowParticles(size_t n) {
  std::vector<Particle> particles;
  for (size_t i = 0; i < n; ++i) {
    particles.push_back(Particle{{1.0 * i, 0, 0}, {0, 0, 0}});
  }
  return particles;
}

const int kMakeSharedLine = __LINE__ + 2;
__attribute__((noinline)) std::shared_ptr<Particle> MakeParticle() {
  return std::make_shared<Particle>(Particle{{1, 2, 3}, {4, 5, 6}});
}

const int kMapInsertLine = __LINE__ + 3;
__attribute__((noinline)) std::map<int, int> FillMap(int n) {
  std::map<int, int> map;
  for (int i = 0; i < n; ++i) map[i] = i * i;
  return map;
}

const int kHashMapInsertLine = __LINE__ + 3;
__attribute__((noinline)) absl::flat_hash_map<int, int> FillHashMap(int n) {
  absl::flat_hash_map<int, int> map;
  for (int i = 0; i < n; ++i) map[i] = i * i;
  return map;
}

}  // namespace memtrace_std_test
