// Copyright 2026 The memtrace Authors.

#include "runtime/scope_table.h"

#include <algorithm>
#include <new>

namespace memtrace {

ScopeTable& ScopeTable::Global() {
  // Constructed on first use and deliberately never destroyed: threads can still enter
  // scopes while static destructors run.
  alignas(ScopeTable) static unsigned char storage[sizeof(ScopeTable)];
  static ScopeTable* table = new (storage) ScopeTable();
  return *table;
}

ScopeTable::ScopeTable() {
  names_.emplace_back("(unscoped)");
  name_ids_.emplace(names_.back(), 0);
  nodes_.push_back(Node{kRootPath, 0, 0});
}

uint32_t ScopeTable::InternName(std::string_view name) {
  std::string clean(name);
  std::replace(clean.begin(), clean.end(), '/', '_');
  if (clean.empty()) clean = "(empty)";
  std::lock_guard<std::mutex> lock(mu_);
  auto it = name_ids_.find(clean);
  if (it != name_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.push_back(clean);
  name_ids_.emplace(std::move(clean), id);
  return id;
}

const char* ScopeTable::NameText(uint32_t name_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return name_id < names_.size() ? names_[name_id].c_str() : "";
}

uint32_t ScopeTable::Child(uint32_t parent, uint32_t name_id) {
  const uint64_t key = (uint64_t{parent} << 32) | name_id;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = children_.find(key);
  if (it != children_.end()) return it->second;
  if (nodes_.size() >= kMaxPaths || parent >= nodes_.size() || name_id >= names_.size()) {
    ++overflowed_;
    return kOverflowPath;
  }
  const auto id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(Node{parent, name_id, nodes_[parent].depth + 1});
  children_.emplace(key, id);
  return id;
}

uint32_t ScopeTable::Parent(uint32_t path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return path < nodes_.size() ? nodes_[path].parent : kRootPath;
}

uint32_t ScopeTable::Depth(uint32_t path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return path < nodes_.size() ? nodes_[path].depth : 1;
}

std::string ScopeTable::Name(uint32_t path) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (path >= nodes_.size()) return "(other scopes)";
  return names_[nodes_[path].name_id];
}

std::string ScopeTable::PathString(uint32_t path) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (path >= nodes_.size()) return "(other scopes)";
  if (path == kRootPath) return names_[0];
  std::vector<uint32_t> chain;
  for (uint32_t p = path; p != kRootPath; p = nodes_[p].parent) chain.push_back(p);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!out.empty()) out += '/';
    out += names_[nodes_[*it].name_id];
  }
  return out;
}

size_t ScopeTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

uint64_t ScopeTable::overflowed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return overflowed_;
}

}  // namespace memtrace
