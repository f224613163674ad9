// Copyright 2026 The memtrace Authors.

#include "analysis/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sinks/json_text.h"

namespace memtrace {
namespace analysis_internal {

// One ELF file opened with libdwfl, alone in its own Dwfl session (so modules of a capture
// never collide in one address space), reported at base 0: a dwfl address is the ELF
// virtual address plus `dwfl_bias` (0 in practice, asked for rather than assumed).
struct LoadedModule {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  GElf_Addr dwfl_bias = 0;
  std::vector<GElf_Phdr> loads;  // PT_LOAD segments
  std::string build_id;          // lower-case hex, empty when the file has none

  ~LoadedModule() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

}  // namespace analysis_internal

namespace {

using analysis_internal::LoadedModule;

// Offline callbacks: find separate debug information the standard way (.gnu_debuglink,
// /usr/lib/debug/.build-id); the main file is given by path.
char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

std::shared_ptr<LoadedModule> Open(const std::string& path) {
  auto loaded = std::make_shared<LoadedModule>();
  loaded->dwfl = dwfl_begin(&kCallbacks);
  if (loaded->dwfl == nullptr) return nullptr;
  dwfl_report_begin(loaded->dwfl);
  loaded->module = dwfl_report_elf(loaded->dwfl, path.c_str(), path.c_str(), -1, 0, false);
  dwfl_report_end(loaded->dwfl, nullptr, nullptr);
  if (loaded->module == nullptr) return nullptr;  // missing, unreadable or not ELF
  Elf* elf = dwfl_module_getelf(loaded->module, &loaded->dwfl_bias);
  if (elf == nullptr) return nullptr;
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0) return nullptr;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) != nullptr && phdr.p_type == PT_LOAD) {
      loaded->loads.push_back(phdr);
    }
  }
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int len = dwfl_module_build_id(loaded->module, &bits, &vaddr);
  for (int i = 0; i < len; ++i) {
    static constexpr char kHex[] = "0123456789abcdef";
    loaded->build_id.push_back(kHex[bits[i] >> 4]);
    loaded->build_id.push_back(kHex[bits[i] & 15]);
  }
  return loaded;
}

std::string Demangle(const char* name) {
  if (name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (out != nullptr) {
      std::string s = status == 0 ? out : name;
      free(out);
      return s;
    }
  }
  return name;
}

// A symbol's name without the version a symbol table may give it: a library's separate
// debug file lists "__libc_start_main@@GLIBC_2.34" (the default version) and
// "memcpy@GLIBC_2.2.5" (an older one), for functions called __libc_start_main and memcpy.
std::string WithoutVersion(const char* name) {
  const char* at = strchr(name, '@');
  return at == nullptr || at == name ? std::string(name) : std::string(name, at);
}

// The name of the DWARF subprogram containing `addr` (a dwfl address), or null.
const char* DwarfFunctionName(Dwfl_Module* module, Dwarf_Addr addr) {
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(module, addr, &bias);
  if (cu == nullptr) return nullptr;
  Dwarf_Die* scopes = nullptr;
  const int n = dwarf_getscopes(cu, addr - bias, &scopes);
  const char* name = nullptr;
  for (int i = 0; i < n && name == nullptr; ++i) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram) continue;
    Dwarf_Attribute attr;
    name = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_linkage_name, &attr));
    if (name == nullptr) name = dwarf_diename(&scopes[i]);
  }
  free(scopes);
  return name;
}

}  // namespace

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

void Symbolizer::AddModule(const CaptureRecord& module) {
  if (module.end <= module.start) return;
  by_start_[module.start] = modules_.size();
  modules_.push_back(Module{module});
}

Symbolizer::Module* Symbolizer::FindModule(uint64_t pc) {
  auto it = by_start_.upper_bound(pc);
  if (it == by_start_.begin()) return nullptr;
  --it;
  Module& m = modules_[it->second];
  return pc < m.record.end ? &m : nullptr;
}

void Symbolizer::Load(Module& m) {
  m.tried = true;
  auto found = files_.find(m.record.path);
  if (found == files_.end()) {
    found = files_.emplace(m.record.path, Open(m.record.path)).first;
  }
  std::shared_ptr<LoadedModule> file = found->second;
  if (file == nullptr) {
    m.missing = MissingSymbols::kNoFile;
    return;
  }
  // A different build id means the file on disk is not the one that ran: treat as missing.
  if (!m.record.build_id.empty() && m.record.build_id != file->build_id) {
    m.missing = MissingSymbols::kOtherBuild;
    return;
  }
  for (const GElf_Phdr& p : file->loads) {
    const uint64_t page_start = p.p_offset & ~uint64_t{0xfff};
    if (m.record.offset >= page_start && m.record.offset < p.p_offset + p.p_filesz) {
      // File offset o maps to p_vaddr + (o - p_offset); `offset` is mapped at `start`.
      m.bias = m.record.start - (p.p_vaddr + m.record.offset - p.p_offset);
      m.loaded = std::move(file);
      return;
    }
  }
  m.missing = MissingSymbols::kNoFile;  // no segment of the file holds the mapped offset
}

const SymbolizedFrame& Symbolizer::Resolve(uint64_t pc) {
  auto cached = cache_.find(pc);
  if (cached != cache_.end()) return cached->second;
  SymbolizedFrame& f = cache_[pc];
  f.pc = pc;
  f.function = "??";
  Module* m = FindModule(pc);
  if (m == nullptr) return f;
  f.module = m->record.path;
  if (!m->tried) Load(*m);
  if (m->loaded == nullptr) {
    f.module_offset = pc - m->record.start + m->record.offset;
    CountUnresolved(*m);
    return f;
  }
  const LoadedModule& file = *m->loaded;
  f.module_offset = pc - m->bias;
  // pc is a return address: pc - 1 is inside the call instruction.
  const Dwarf_Addr lookup = f.module_offset - (pc > m->record.start ? 1 : 0) + file.dwfl_bias;
  GElf_Sym sym;
  GElf_Off offset = 0;
  const char* name = dwfl_module_addrinfo(file.module, lookup, &offset, &sym, nullptr,
                                          nullptr, nullptr);
  if (name == nullptr) name = DwarfFunctionName(file.module, lookup);
  if (name != nullptr && name[0] != '\0') f.function = Demangle(WithoutVersion(name).c_str());
  if (Dwfl_Line* line = dwfl_module_getsrc(file.module, lookup); line != nullptr) {
    int lineno = 0;
    const char* source = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (source != nullptr && lineno > 0) {
      f.file = source;
      f.line = static_cast<uint32_t>(lineno);
    }
  }
  if (f.function == "??") CountUnresolved(*m);
  return f;
}

void Symbolizer::CountUnresolved(Module& m) {
  if (m.unresolved++ == 0) unresolved_order_.push_back(static_cast<size_t>(&m - modules_.data()));
}

std::vector<UnresolvedModule> Symbolizer::Unresolved() const {
  std::vector<UnresolvedModule> out;
  for (size_t index : unresolved_order_) {
    const Module& m = modules_[index];
    AddUnresolved(&out, UnresolvedModule{m.record.path, m.record.build_id, m.missing,
                                         m.unresolved});
  }
  return out;
}

void AddUnresolved(std::vector<UnresolvedModule>* modules, const UnresolvedModule& u) {
  auto same = std::find_if(modules->begin(), modules->end(),
                           [&](const UnresolvedModule& o) { return o.path == u.path; });
  if (same == modules->end()) {
    modules->push_back(u);
  } else {
    same->frames += u.frames;
  }
}

std::string UnresolvedJson(const std::vector<UnresolvedModule>& modules) {
  std::string out;
  for (const UnresolvedModule& u : modules) {
    const char* why = u.why == MissingSymbols::kNoFile       ? "no_file"
                      : u.why == MissingSymbols::kOtherBuild ? "other_build"
                                                             : "no_symbols";
    absl::StrAppend(&out, out.empty() ? "" : ",", "{\"path\":", JsonQuote(u.path), ",\"why\":\"",
                    why, "\",\"addresses\":", u.frames, ",\"build_id\":", JsonQuote(u.build_id),
                    ",\"debug_file\":", JsonQuote(DebugFileForBuildId(u.build_id)), "}");
  }
  return absl::StrCat("[", out, "]");
}

std::string DebugFileForBuildId(const std::string& build_id) {
  if (build_id.size() < 3) return "";
  return absl::StrCat("/usr/lib/debug/.build-id/", build_id.substr(0, 2), "/",
                      build_id.substr(2), ".debug");
}

std::string Symbolizer::Describe(uint64_t pc) {
  if (pc == 0) return std::string(kNoCallSite);
  const SymbolizedFrame& f = Resolve(pc);
  if (!f.file.empty()) return absl::StrCat(f.function, " (", f.file, ":", f.line, ")");
  if (!f.module.empty()) {
    return absl::StrCat(f.function, " (", f.module, "+0x", absl::Hex(f.module_offset), ")");
  }
  return absl::StrCat(f.function, " (0x", absl::Hex(pc), ")");
}

}  // namespace memtrace
