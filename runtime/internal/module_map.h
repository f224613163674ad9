// Copyright 2026 The memtrace Authors.
//
// module_map.h: the executable mappings of this process, for symbolizing call sites later.
//
// Call sites and stacks are recorded as raw return addresses (cheap on the hot path).
// Turning them into function, file and line happens off the hot path, in the analyzer,
// which needs to know which file each address came from. LoadedModules() lists every
// loaded ELF object's executable segments: the mapped range, the file offset it starts
// at, and the object's GNU build id, so a reader can find the same file and check it is
// the same build (docs/capture-format.md, `module` lines).
//
// Thread safety: LoadedModules() may be called from any thread (it takes the dynamic
// loader's lock through dl_iterate_phdr, and allocates); never from the hot path.

#ifndef MEMTRACE_RUNTIME_INTERNAL_MODULE_MAP_H_
#define MEMTRACE_RUNTIME_INTERNAL_MODULE_MAP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace memtrace {

struct ModuleInfo {
  std::string path;      // absolute path of the file ("/proc/self/exe" resolved)
  uint64_t start = 0;    // first mapped address of the executable segment
  uint64_t end = 0;      // one past the last
  uint64_t offset = 0;   // file offset mapped at `start`
  std::string build_id;  // lower-case hex, empty when the object has none
};

// Every executable PT_LOAD segment of every loaded object, in load order. The vDSO and
// objects without a file are left out.
std::vector<ModuleInfo> LoadedModules();

// The running executable's path (/proc/self/exe resolved), or "" when it cannot be read.
std::string ExecutablePath();

// The same, leaving out each object for which `skip(name, base)` is true: `name` is the
// loader's name for it ("" for the main program) and `base` its load address. Asked
// before any work on the object (its build id is not read), so a caller that already has
// most of them pays little.
std::vector<ModuleInfo> LoadedModules(
    const std::function<bool(std::string_view name, uint64_t base)>& skip);

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_MODULE_MAP_H_
