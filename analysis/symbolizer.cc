// Copyright 2026 The memtrace Authors.

#include "analysis/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/debuginfod.h"
#include "analysis/function_names.h"
#include "analysis/internal/inline_index.h"
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
  std::string path;              // the file opened
  std::string name;              // the capture's path of the module, for messages
  std::FILE* progress = nullptr;  // where a request to debuginfod is announced
  // Why debuginfod gave no debug information for it; empty when it was not asked.
  std::string debuginfod;
  InlineIndex inlines;  // the functions inlined at its addresses, unit by unit

  ~LoadedModule() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

}  // namespace analysis_internal

namespace {

using analysis_internal::InlineIndex;
using analysis_internal::LoadedModule;

std::string Hex(const unsigned char* bits, size_t len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < len; ++i) {
    out.push_back(kHex[bits[i] >> 4]);
    out.push_back(kHex[bits[i] & 15]);
  }
  return out;
}

// The GNU debuglink checksum of the file open at `fd` (the CRC-32 zlib computes), or
// nullopt when it cannot be read.
std::optional<uint32_t> FileCrc(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return std::nullopt;
  if (st.st_size == 0) return static_cast<uint32_t>(crc32(0, nullptr, 0));
  void* data = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (data == MAP_FAILED) return std::nullopt;
  uLong crc = crc32(0, nullptr, 0);
  const auto* bytes = static_cast<const Bytef*>(data);
  for (off_t done = 0; done < st.st_size;) {
    const uInt n = static_cast<uInt>(std::min<off_t>(st.st_size - done, 1 << 30));
    crc = crc32(crc, bytes + done, n);
    done += n;
  }
  munmap(data, static_cast<size_t>(st.st_size));
  return static_cast<uint32_t>(crc);
}

// Whether the ELF file open at `fd` is the debug information of a module with this
// build id (lower-case hex), or, for a module without one, the file its debuglink names
// (the same checksum, when the link gives one).
bool IsDebugFileOf(int fd, const std::string& build_id, bool has_crc, GElf_Word crc) {
  if (build_id.empty()) return !has_crc || FileCrc(fd) == crc;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return false;
  const void* bits = nullptr;
  const ssize_t len = dwelf_elf_gnu_build_id(elf, &bits);
  const bool same =
      len > 0 && Hex(static_cast<const unsigned char*>(bits), static_cast<size_t>(len)) ==
                     build_id;
  elf_end(elf);
  return same;
}

// The build id (lower-case hex) of the supplementary file a dwz-compressed debug file
// shares DWARF with, from its .gnu_debugaltlink section (the file's name, a NUL, the build
// id); empty when the file at `path` has none.
std::string AltLinkBuildId(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  size_t names = 0;
  if (elf != nullptr && elf_getshdrstrndx(elf, &names) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr) continue;
      const char* name = elf_strptr(elf, names, shdr.sh_name);
      if (name == nullptr || strcmp(name, ".gnu_debugaltlink") != 0) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr || data->d_buf == nullptr) break;
      const auto* bytes = static_cast<const unsigned char*>(data->d_buf);
      const size_t length = strnlen(static_cast<const char*>(data->d_buf), data->d_size);
      if (length + 1 < data->d_size) {
        out = Hex(bytes + length + 1, data->d_size - length - 1);
      }
      break;
    }
  }
  if (elf != nullptr) elf_end(elf);
  close(fd);
  return out;
}

// Opens the first of `candidates` that is the debug information of `build_id` (or, for a
// module without a build id, whose checksum is `crc` when `has_crc`).
int OpenFirstDebugFile(const std::vector<std::string>& candidates, const std::string& build_id,
                       bool has_crc, GElf_Word crc, char** debuginfo_file_name) {
  for (const std::string& candidate : candidates) {
    const int fd = open(candidate.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (IsDebugFileOf(fd, build_id, has_crc, crc)) {
      *debuginfo_file_name = strdup(candidate.c_str());
      return fd;
    }
    close(fd);
  }
  return -1;
}

// The directory part of `path`: "." when it has none.
std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// libdwfl's find_debuginfo callback. It is asked for two things:
//   - the separate debug information of a module that has none in its own file: looked
//     for where elfutils' dwfl_standard_find_debuginfo looks on this machine,
//     /usr/lib/debug/.build-id/ab/cdef....debug, then the file the module's .gnu_debuglink
//     names (or FILE.debug) beside it, in .debug/ beside it, and under /usr/lib/debug;
//   - the supplementary file of a debug file that dwz compressed (Debian's -dbgsym
//     packages are): `file_name` is then that debug file and `debuglink_file` the name
//     its .gnu_debugaltlink gives (/usr/lib/debug/.dwz/...), looked for at that name and
//     by the build id the link gives.
// When neither is on this machine, the file comes from debuginfod (debuginfod.h) by build
// id. The standard function would ask debuginfod itself when DEBUGINFOD_URLS is set, but
// silently, for every Dwfl, and without saying why nothing came; this one announces the
// request, asks once per build id in a process, and keeps the reason for the note under
// the tables.
int FindDebugInfo(Dwfl_Module* /*mod*/, void** userdata, const char* /*modname*/,
                  GElf_Addr /*base*/, const char* file_name, const char* debuglink_file,
                  GElf_Word debuglink_crc, char** debuginfo_file_name) {
  auto* loaded = static_cast<LoadedModule*>(*userdata);
  if (loaded == nullptr || file_name == nullptr) return -1;
  const std::string file = file_name;
  std::vector<std::string> candidates;
  std::string build_id;
  bool has_crc = false;
  std::string module = loaded->name;  // as the request to debuginfod names it
  if (file != loaded->path) {
    // The dwz supplementary file of the debug file `file`.
    build_id = AltLinkBuildId(file_name);
    if (build_id.empty() || debuglink_file == nullptr) return -1;
    const std::string alt = debuglink_file;
    candidates.push_back(alt[0] == '/' ? alt : DirectoryOf(file) + "/" + alt);
    candidates.push_back(DebugFileForBuildId(build_id));
    module += ", the part dwz moved to a shared file";
  } else {
    build_id = loaded->build_id;
    has_crc = debuglink_file != nullptr;
    if (!build_id.empty()) candidates.push_back(DebugFileForBuildId(build_id));
    const std::string dir = DirectoryOf(file);
    const std::string link = debuglink_file != nullptr
                                 ? std::string(debuglink_file)
                                 : file.substr(file.rfind('/') + 1) + ".debug";
    for (const std::string& c :
         {dir + "/" + link, dir + "/.debug/" + link, "/usr/lib/debug" + dir + "/" + link}) {
      if (c != file) candidates.push_back(c);
    }
  }
  const int local =
      OpenFirstDebugFile(candidates, build_id, has_crc, debuglink_crc, debuginfo_file_name);
  if (local >= 0) return local;

  absl::StatusOr<std::string> fetched = Debuginfod::Fetch(
      Debuginfod::Kind::kDebugInfo, build_id, module, loaded->progress);
  if (!fetched.ok()) {
    // Not asked (no servers, no build id): nothing to say beyond the usual advice.
    if (!absl::IsFailedPrecondition(fetched.status()) && loaded->debuginfod.empty()) {
      loaded->debuginfod = std::string(fetched.status().message());
    }
    return -1;
  }
  const int fd = open(fetched->c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    loaded->debuginfod = absl::StrCat("the file it gave, ", *fetched, ", cannot be read: ",
                                      strerror(errno));
    return -1;
  }
  *debuginfo_file_name = strdup(fetched->c_str());
  return fd;
}

// Offline callbacks: separate debug information from FindDebugInfo(); the main file is
// given by path.
char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = FindDebugInfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

// Opens the ELF file at `path` for the module the capture calls `name`.
std::shared_ptr<LoadedModule> Open(const std::string& path, const std::string& name,
                                   std::FILE* progress) {
  auto loaded = std::make_shared<LoadedModule>();
  loaded->path = path;
  loaded->name = name;
  loaded->progress = progress;
  loaded->dwfl = dwfl_begin(&kCallbacks);
  if (loaded->dwfl == nullptr) return nullptr;
  dwfl_report_begin(loaded->dwfl);
  loaded->module = dwfl_report_elf(loaded->dwfl, path.c_str(), path.c_str(), -1, 0, false);
  dwfl_report_end(loaded->dwfl, nullptr, nullptr);
  if (loaded->module == nullptr) return nullptr;  // missing, unreadable or not ELF
  // FindDebugInfo() gets the module's user data: this LoadedModule, which outlives it.
  void** userdata = nullptr;
  dwfl_module_info(loaded->module, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr,
                   nullptr);
  if (userdata != nullptr) *userdata = loaded.get();
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
  if (len > 0) loaded->build_id = Hex(bits, static_cast<size_t>(len));
  return loaded;
}

// A symbol's name without the version a symbol table may give it: a library's separate
// debug file lists "__libc_start_main@@GLIBC_2.34" (the default version) and
// "memcpy@GLIBC_2.2.5" (an older one), for functions called __libc_start_main and memcpy.
std::string WithoutVersion(const char* name) {
  const char* at = strchr(name, '@');
  return at == nullptr || at == name ? std::string(name) : std::string(name, at);
}

// An inlined function's name, demangled: from its linkage name when the DWARF gives one,
// else its name qualified by the namespaces, classes and functions around its declaration
// (InlineIndex::ScopeOf(): "ns::Parser::Grow"), without the parameter list the DWARF name
// lacks. Code built with -g1 gives linkage names for members, not for functions with
// internal linkage, and puts those at the top level: `InlinedMarker`, `operator()`.
std::string InlinedFunctionName(Dwarf_Die* die, const InlineIndex& index) {
  Dwarf_Attribute attr;
  if (const char* linkage =
          dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr))) {
    return Demangle(linkage);
  }
  // The declaration: through the abstract origin, then the specification (a member
  // function's declaration is inside its class).
  Dwarf_Die origin = *die;
  for (int hops = 0; hops < 8; ++hops) {
    Dwarf_Die next;
    if (dwarf_formref_die(dwarf_attr(&origin, DW_AT_abstract_origin, &attr), &next) != nullptr ||
        dwarf_formref_die(dwarf_attr(&origin, DW_AT_specification, &attr), &next) != nullptr) {
      origin = next;
    } else {
      break;
    }
  }
  const char* name = dwarf_diename(&origin);
  if (name == nullptr) return "??";
  const std::string* scope = index.ScopeOf(dwarf_dieoffset(&origin));
  return scope != nullptr ? *scope + name : std::string(name);
}

// The name of the DWARF subprogram containing `addr` (a dwfl address), or null: its
// linkage name (mangled) when it has one, else its name, both looked for through
// DW_AT_abstract_origin and DW_AT_specification.
const char* DwarfFunctionName(Dwfl_Module* module, Dwarf_Addr addr) {
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(module, addr, &bias);
  if (cu == nullptr) return nullptr;
  Dwarf_Die* scopes = nullptr;
  const int n = dwarf_getscopes(cu, addr - bias, &scopes);
  const char* name = nullptr;
  for (int i = 0; i < n; ++i) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram) continue;
    Dwarf_Attribute attr;
    name = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_linkage_name, &attr));
    if (name == nullptr) {
      name = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_name, &attr));
    }
    break;
  }
  free(scopes);
  return name;
}

// The functions the compiler inlined at `addr` (a dwfl address of `loaded`), innermost
// first, each at its own line: the innermost at `*file`:`*line` (the line table's), each
// other at the line where it called the one inlined into it. On return `*file` and
// `*line` are where the outermost inlined function was called from: the line of the
// function the symbol table names. Nothing changes where nothing was inlined.
std::vector<InlinedFrame> InlinedAt(LoadedModule& loaded, Dwarf_Addr addr, std::string* file,
                                    uint32_t* line) {
  std::vector<InlinedFrame> out;
  Dwarf_Die cu;
  std::vector<Dwarf_Die> dies = loaded.inlines.At(loaded.module, addr, &cu);
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  for (Dwarf_Die& die : dies) {
    out.push_back(InlinedFrame{InlinedFunctionName(&die, loaded.inlines), *file, *line});
    // Where it was inlined: a line of the function around it.
    Dwarf_Attribute attr;
    Dwarf_Word call_file = 0;
    Dwarf_Word call_line = 0;
    const char* caller_file = nullptr;
    if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_file, &attr), &call_file) == 0 &&
        (files != nullptr || dwarf_getsrcfiles(&cu, &files, &file_count) == 0) &&
        call_file < file_count) {
      caller_file = dwarf_filesrc(files, call_file, nullptr, nullptr);
    }
    if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_line, &attr), &call_line) != 0) {
      call_line = 0;
    }
    *file = caller_file != nullptr ? caller_file : "";
    *line = caller_file != nullptr ? static_cast<uint32_t>(call_line) : 0;
  }
  return out;
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

std::shared_ptr<LoadedModule> Symbolizer::OpenFile(const std::string& path,
                                                   const std::string& name) {
  auto found = files_.find(path);
  if (found == files_.end()) found = files_.emplace(path, Open(path, name, progress_)).first;
  return found->second;
}

void Symbolizer::Load(Module& m) {
  m.tried = true;
  std::shared_ptr<LoadedModule> file = OpenFile(m.record.path, m.record.path);
  // A different build id means the file on disk is not the one that ran.
  const MissingSymbols why = file == nullptr ? MissingSymbols::kNoFile
                             : !m.record.build_id.empty() && m.record.build_id != file->build_id
                                 ? MissingSymbols::kOtherBuild
                                 : MissingSymbols::kNoSymbols;
  if (why != MissingSymbols::kNoSymbols) {
    // The file that ran, by its build id, from debuginfod.
    absl::StatusOr<std::string> fetched = Debuginfod::Fetch(
        Debuginfod::Kind::kExecutable, m.record.build_id, m.record.path, progress_);
    file = fetched.ok() ? OpenFile(*fetched, m.record.path) : nullptr;
    if (file != nullptr && file->build_id != m.record.build_id) file = nullptr;
    if (file == nullptr) {
      m.missing = why;
      if (!fetched.ok() && !absl::IsFailedPrecondition(fetched.status())) {
        m.debuginfod = std::string(fetched.status().message());
      } else if (fetched.ok()) {
        m.debuginfod = absl::StrCat("the file it gave, ", *fetched, ", is not that build");
      }
      return;
    }
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
  LoadedModule& file = *m->loaded;
  f.module_offset = pc - m->bias;
  // pc is a return address: pc - 1 is inside the call instruction.
  const Dwarf_Addr lookup = f.module_offset - (pc > m->record.start ? 1 : 0) + file.dwfl_bias;
  GElf_Sym sym;
  GElf_Off offset = 0;
  const char* name = dwfl_module_addrinfo(file.module, lookup, &offset, &sym, nullptr,
                                          nullptr, nullptr);
  if (name == nullptr) name = DwarfFunctionName(file.module, lookup);
  if (name != nullptr && name[0] != '\0') f.function = Demangle(WithoutVersion(name).c_str());
  // Only a compile unit that holds the address gives it a line: libdw answers for an
  // address in a gap between units (a function without debug info placed after one, as
  // _start after main in .text.startup) with the last line of the unit before it.
  Dwarf_Addr cu_bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(file.module, lookup, &cu_bias);
  const bool in_unit = cu != nullptr && dwarf_haspc(cu, lookup - cu_bias) > 0;
  if (Dwfl_Line* line = in_unit ? dwfl_module_getsrc(file.module, lookup) : nullptr;
      line != nullptr) {
    int lineno = 0;
    const char* source = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (source != nullptr && lineno > 0) {
      f.file = source;
      f.line = static_cast<uint32_t>(lineno);
    }
  }
  // The line table's line is inside the innermost function inlined here, if any: the
  // frame's own function is at the line that called the outermost of them.
  if (!f.file.empty()) f.inlined = InlinedAt(file, lookup, &f.file, &f.line);
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
                                         m.unresolved,
                                         m.loaded != nullptr ? m.loaded->debuginfod
                                                             : m.debuginfod});
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
  const bool servers = Debuginfod::HasServers();
  std::string out;
  for (const UnresolvedModule& u : modules) {
    const char* why = u.why == MissingSymbols::kNoFile       ? "no_file"
                      : u.why == MissingSymbols::kOtherBuild ? "other_build"
                                                             : "no_symbols";
    absl::StrAppend(&out, out.empty() ? "" : ",", "{\"path\":", JsonQuote(u.path), ",\"why\":\"",
                    why, "\",\"addresses\":", u.frames, ",\"build_id\":", JsonQuote(u.build_id),
                    ",\"debug_file\":", JsonQuote(DebugFileForBuildId(u.build_id)),
                    ",\"debuginfod\":", JsonQuote(u.debuginfod),
                    ",\"debuginfod_servers\":", servers ? "true" : "false", "}");
  }
  return absl::StrCat("[", out, "]");
}

std::string DebugFileForBuildId(const std::string& build_id) {
  if (build_id.size() < 3) return "";
  return absl::StrCat("/usr/lib/debug/.build-id/", build_id.substr(0, 2), "/",
                      build_id.substr(2), ".debug");
}

std::string DescribeInlined(const InlinedFrame& frame) {
  if (frame.file.empty()) return frame.function;
  return absl::StrCat(frame.function, " (", frame.file, ":", frame.line, ")");
}

std::string Symbolizer::Describe(uint64_t pc) {
  if (pc == 0) return std::string(kNoCallSite);
  if (pc == kOtherSitesAddress) return std::string(kOtherSites);
  const SymbolizedFrame& f = Resolve(pc);
  if (!f.file.empty()) return absl::StrCat(f.function, " (", f.file, ":", f.line, ")");
  if (!f.module.empty()) {
    return absl::StrCat(f.function, " (", f.module, "+0x", absl::Hex(f.module_offset), ")");
  }
  return absl::StrCat(f.function, " (0x", absl::Hex(pc), ")");
}

}  // namespace memtrace
