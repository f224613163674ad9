// Copyright 2026 The memtrace Authors.

#include "analysis/process_tree.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace memtrace {

std::vector<ProcessTreeRow> ProcessTree(const std::vector<ProcessImage>& images) {
  std::vector<size_t> order(images.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return images[a].started_unix_ns < images[b].started_unix_ns;
  });

  // Walking in start order, the latest image of each pid is the one running at that time.
  absl::flat_hash_map<uint64_t, size_t> latest;
  std::vector<ProcessTreeRow> rows(images.size());
  std::vector<std::vector<size_t>> children(images.size());
  std::vector<std::optional<size_t>> next_image(images.size());
  std::vector<size_t> roots;
  for (const size_t i : order) {
    const ProcessImage& image = images[i];
    ProcessTreeRow& row = rows[i];
    row.image = i;
    auto running = [&](uint64_t pid) -> std::optional<size_t> {
      if (pid == 0) return std::nullopt;
      auto it = latest.find(pid);
      return it == latest.end() ? std::nullopt : std::optional<size_t>(it->second);
    };
    std::optional<size_t> parent;
    if (image.forked) {
      // A new process, even if an earlier one had its pid.
      if ((parent = running(image.fork_parent))) row.relation = ProcessRelation::kForked;
    } else if (auto same = running(image.pid); same && images[*same].ended_by_exec &&
                                               !next_image[*same]) {
      parent = same;
      row.relation = ProcessRelation::kExeced;
    } else if ((parent = running(image.ppid))) {
      row.relation = ProcessRelation::kStarted;
    }
    if (!parent) {
      row.relation = ProcessRelation::kRoot;
      roots.push_back(i);
    } else {
      row.parent = *parent;
      if (row.relation == ProcessRelation::kExeced) {
        next_image[*parent] = i;
      } else {
        children[*parent].push_back(i);
      }
    }
    latest[image.pid] = i;
  }

  // Pre-order, without recursion (a long exec chain or a deep tree must not overflow the
  // stack): an image, its children one deeper, then the image that replaced it.
  std::vector<ProcessTreeRow> out;
  out.reserve(images.size());
  // The stack pops from the back, so each list is pushed in reverse.
  std::vector<std::pair<size_t, int>> stack;
  for (auto root = roots.rbegin(); root != roots.rend(); ++root) stack.emplace_back(*root, 0);
  while (!stack.empty()) {
    const auto [i, depth] = stack.back();
    stack.pop_back();
    rows[i].depth = depth;
    out.push_back(rows[i]);
    if (next_image[i]) stack.emplace_back(*next_image[i], depth);
    for (auto child = children[i].rbegin(); child != children[i].rend(); ++child) {
      stack.emplace_back(*child, depth + 1);
    }
  }
  return out;
}

}  // namespace memtrace
