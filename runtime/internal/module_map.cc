// Copyright 2026 The memtrace Authors.

#include "runtime/internal/module_map.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <utility>

namespace memtrace {
namespace {

// The GNU build id from the object's PT_NOTE segments, which are mapped with it.
std::string BuildId(const dl_phdr_info* info) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* const end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((note->n_namesz + 3) & ~3u);
      const char* next = desc + ((note->n_descsz + 3) & ~3u);
      if (next > end) break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        std::string out;
        out.reserve(2 * note->n_descsz);
        for (uint32_t j = 0; j < note->n_descsz; ++j) {
          const auto byte = static_cast<unsigned char>(desc[j]);
          out += kHex[byte >> 4];
          out += kHex[byte & 15];
        }
        return out;
      }
      p = next;
    }
  }
  return {};
}

struct Collect {
  std::vector<ModuleInfo> out;
  const std::function<bool(std::string_view, uint64_t)>* skip = nullptr;
  bool first = true;  // the main program is the first object dl_iterate_phdr reports
};

int AddObject(dl_phdr_info* info, size_t, void* data) {
  auto* collect = static_cast<Collect*>(data);
  const bool first = collect->first;
  collect->first = false;
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (collect->skip != nullptr && (*collect->skip)(name, info->dlpi_addr)) return 0;
  std::vector<ModuleInfo>* out = &collect->out;
  std::string path = name;
  if (path.empty()) {
    // The main program has an empty name; the vDSO has a name but no file.
    if (!first) return 0;
    path = ExecutablePath();
  }
  if (path.empty() || path.rfind("linux-vdso", 0) == 0 || path.rfind("linux-gate", 0) == 0) {
    return 0;
  }
  const std::string build_id = BuildId(info);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
    ModuleInfo m;
    m.path = path;
    m.start = info->dlpi_addr + ph.p_vaddr;
    m.end = m.start + ph.p_memsz;
    m.offset = ph.p_offset;
    m.build_id = build_id;
    out->push_back(std::move(m));
  }
  return 0;
}

}  // namespace

std::string ExecutablePath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::vector<ModuleInfo> LoadedModules() {
  Collect collect;
  dl_iterate_phdr(&AddObject, &collect);
  return std::move(collect.out);
}

std::vector<ModuleInfo> LoadedModules(
    const std::function<bool(std::string_view name, uint64_t base)>& skip) {
  Collect collect;
  collect.skip = &skip;
  dl_iterate_phdr(&AddObject, &collect);
  return std::move(collect.out);
}

}  // namespace memtrace
