// Copyright 2026 The memtrace Authors.

#include "preload/own_libraries.h"

#include <link.h>

#include <cstring>
#include <map>

namespace memtrace::preload_internal {
namespace {

struct LoadedObject {
  std::string path;
  std::string soname;
  std::vector<std::string> needed;
  std::vector<CodeRange> segments;
};

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Whether [address, address + 1) lies in one of `o`'s loaded segments.
bool InSegments(const LoadedObject& o, uint64_t address) {
  for (const CodeRange& r : o.segments) {
    if (r.Contains(address)) return true;
  }
  return false;
}

int AddObject(dl_phdr_info* info, size_t, void* data) {
  auto* objects = static_cast<std::vector<LoadedObject>*>(data);
  LoadedObject o;
  o.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const ElfW(Dyn)* dynamic = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      const uint64_t begin = info->dlpi_addr + ph.p_vaddr;
      o.segments.push_back(CodeRange{begin, begin + ph.p_memsz, o.path});
    } else if (ph.p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + ph.p_vaddr);
    }
  }
  if (dynamic != nullptr) {
    uint64_t strtab = 0;
    std::vector<uint64_t> needed;
    uint64_t soname = ~uint64_t{0};
    for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
      if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
      if (d->d_tag == DT_NEEDED) needed.push_back(d->d_un.d_val);
      if (d->d_tag == DT_SONAME) soname = d->d_un.d_val;
    }
    // The loader relocates the dynamic section's addresses in place where it can write
    // it (x86-64); where it did not, the address is still the file's.
    if (strtab != 0 && !InSegments(o, strtab)) strtab += info->dlpi_addr;
    if (strtab != 0 && InSegments(o, strtab)) {
      const char* strings = reinterpret_cast<const char*>(strtab);
      for (uint64_t n : needed) o.needed.push_back(Basename(strings + n));
      if (soname != ~uint64_t{0}) o.soname = strings + soname;
    }
  }
  objects->push_back(std::move(o));
  return 0;
}

}  // namespace

std::vector<CodeRange> LibrariesOnlyOursNeed(const void* own_address) {
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(&AddObject, &objects);
  const auto own = reinterpret_cast<uint64_t>(own_address);
  // Each object by the names a DT_NEEDED entry may give it: its soname, its file name.
  std::map<std::string, size_t> by_name;
  size_t self = objects.size();
  for (size_t i = 0; i < objects.size(); ++i) {
    if (!objects[i].soname.empty()) by_name.emplace(objects[i].soname, i);
    if (!objects[i].path.empty()) by_name.emplace(Basename(objects[i].path), i);
    if (InSegments(objects[i], own)) self = i;
  }
  if (self == objects.size()) return {};
  std::vector<std::vector<size_t>> edges(objects.size());
  std::vector<bool> needed_by_someone(objects.size(), false);
  for (size_t i = 0; i < objects.size(); ++i) {
    for (const std::string& name : objects[i].needed) {
      auto it = by_name.find(name);
      if (it == by_name.end()) continue;
      edges[i].push_back(it->second);
      needed_by_someone[it->second] = true;
    }
  }
  // The program's: reachable from the program ([0]) and from what nothing needs.
  std::vector<bool> programs(objects.size(), false);
  std::vector<size_t> stack;
  for (size_t i = 0; i < objects.size(); ++i) {
    if (i != self && (i == 0 || !needed_by_someone[i])) {
      programs[i] = true;
      stack.push_back(i);
    }
  }
  while (!stack.empty()) {
    const size_t i = stack.back();
    stack.pop_back();
    for (size_t j : edges[i]) {
      if (j != self && !programs[j]) {
        programs[j] = true;
        stack.push_back(j);
      }
    }
  }
  // Ours: reachable from this library and not the program's.
  std::vector<bool> ours(objects.size(), false);
  stack.assign(1, self);
  std::vector<CodeRange> out;
  while (!stack.empty()) {
    const size_t i = stack.back();
    stack.pop_back();
    for (size_t j : edges[i]) {
      if (programs[j] || ours[j]) continue;
      ours[j] = true;
      stack.push_back(j);
      out.insert(out.end(), objects[j].segments.begin(), objects[j].segments.end());
    }
  }
  return out;
}

}  // namespace memtrace::preload_internal
