// Copyright 2026 The memtrace Authors.

#include "preload/preload_config.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

namespace memtrace {
namespace {

// Parses a whole decimal number in [lo, hi]; false on anything else.
bool ParseNumber(const char* text, uint64_t lo, uint64_t hi, uint64_t* out) {
  const char* end = text + std::strlen(text);
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text, end, v);
  if (ec != std::errc() || ptr != end || text == end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// `pattern` with each "%p" replaced by `pid` (a number, or a glob); *had_pid says whether
// it had one.
std::string ReplacePid(const std::string& pattern, std::string_view pid, bool* had_pid) {
  std::string out;
  *had_pid = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      out += pid;
      *had_pid = true;
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

// PidTaggedPath() with the tag's text given.
std::string Tagged(const std::string& path, std::string_view pid) {
  const size_t slash = path.rfind('/');
  const size_t name = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.find('.', name + 1);
  const std::string tag = "." + std::string(pid);
  if (dot == std::string::npos) return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

}  // namespace

bool ParseByteSize(std::string_view text, uint64_t* out) {
  uint64_t v = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr == begin) return false;
  std::string_view suffix(ptr, static_cast<size_t>(end - ptr));
  int shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: return false;
    }
    suffix.remove_prefix(1);
    if (suffix != "" && suffix != "B" && suffix != "iB") return false;
  }
  if (v > (uint64_t{1} << 63) >> shift) return false;
  *out = v << shift;
  return true;
}

PreloadConfig ParsePreloadConfig(const std::function<const char*(const char*)>& lookup,
                                 std::vector<std::string>* warnings) {
  PreloadConfig c;
  auto warn = [&](const char* name, const char* value, const std::string& accepted,
                  const std::string& used) {
    warnings->push_back(std::string("memtrace: ") + name + "=\"" + value + "\" is not " +
                        accepted + "; using " + used);
  };
  auto number = [&](const char* name, uint64_t lo, uint64_t hi, uint64_t* out) {
    const char* v = lookup(name);
    if (v == nullptr) return;
    uint64_t parsed;
    if (ParseNumber(v, lo, hi, &parsed)) {
      *out = parsed;
    } else {
      warn(name, v,
           "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi),
           std::to_string(*out));
    }
  };
  // A size in bytes: a whole number, or with K, M, G or T (ParseByteSize), at most `hi`.
  auto size = [&](const char* name, uint64_t hi, uint64_t* out) {
    const char* v = lookup(name);
    if (v == nullptr) return;
    uint64_t parsed;
    if (ParseByteSize(v, &parsed) && parsed <= hi) {
      *out = parsed;
    } else {
      warn(name, v,
           "a size in bytes from 0 to " + std::to_string(hi) +
               " (a whole number, or with K, M, G or T)",
           std::to_string(*out));
    }
  };
  auto flag = [&](const char* name, bool* out) {
    const char* v = lookup(name);
    if (v == nullptr) return;
    if (std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0 || std::strcmp(v, "yes") == 0) {
      *out = true;
    } else if (std::strcmp(v, "0") == 0 || std::strcmp(v, "false") == 0 ||
               std::strcmp(v, "no") == 0 || *v == '\0') {
      *out = false;
    } else {
      warn(name, v, "one of 1, 0, true, false, yes, no", *out ? "1" : "0");
    }
  };
  // A setting that names one of two choices.
  auto either = [&](const char* name, const char* a, auto a_value, const char* b,
                    decltype(a_value) b_value, decltype(a_value)* out) {
    const char* v = lookup(name);
    if (v == nullptr) return;
    if (std::strcmp(v, a) == 0) {
      *out = a_value;
    } else if (std::strcmp(v, b) == 0) {
      *out = b_value;
    } else {
      warn(name, v, std::string("\"") + a + "\" or \"" + b + "\"", *out == a_value ? a : b);
    }
  };

  if (const char* v = lookup("MEMTRACE_OUTPUT"); v != nullptr) {
    if (*v == '\0') {
      warn("MEMTRACE_OUTPUT", v, "a file path", c.output);
    } else {
      c.output = v;
    }
  }
  size("MEMTRACE_MIN_SIZE", uint64_t{1} << 47, &c.min_size);
  uint64_t depth = c.stack_depth;
  number("MEMTRACE_STACK_DEPTH", 0, kMaxPreloadStackDepth, &depth);
  c.stack_depth = static_cast<uint32_t>(depth);
  either("MEMTRACE_UNWIND", "fp", UnwindMethod::kFramePointers, "dwarf", UnwindMethod::kDwarf,
         &c.unwind);
  flag("MEMTRACE_TRACE_CHILDREN", &c.trace_children);
  flag("MEMTRACE_TRACE_FORKS", &c.trace_forks);
  size("MEMTRACE_SAMPLE_BYTES", uint64_t{1} << 40, &c.sample_bytes);
  uint64_t ring = c.ring_capacity_log2;
  number("MEMTRACE_RING_LOG2", 10, 22, &ring);
  c.ring_capacity_log2 = static_cast<uint32_t>(ring);
  flag("MEMTRACE_MMAP", &c.mmap);
  either("MEMTRACE_FENCE", "membarrier", FenceMode::kMembarrier, "seq_cst", FenceMode::kSeqCst,
         &c.fence);
  flag("MEMTRACE_EXACT_ORDER", &c.exact_order);
  flag("MEMTRACE_LIVE", &c.live);
  if (const char* v = lookup("MEMTRACE_MAX_BYTES"); v != nullptr) {
    uint64_t bytes = 0;
    if (ParseByteSize(v, &bytes)) {
      c.max_bytes = bytes;
    } else {
      warn("MEMTRACE_MAX_BYTES", v, "a size in bytes (a whole number, or with K, M, G or T)",
           "no limit");
    }
  }
  uint64_t sites = c.site_capacity;
  number("MEMTRACE_SITE_CAPACITY", 1, kMaxPreloadSiteCapacity, &sites);
  c.site_capacity = static_cast<uint32_t>(sites);
  uint64_t threads = c.tracer_threads;
  number("MEMTRACE_TRACER_THREADS", 0, kMaxPreloadTracerThreads, &threads);
  c.tracer_threads = static_cast<uint32_t>(threads);
  if (const char* v = lookup("MEMTRACE_TRACER_CPUS"); v != nullptr) {
    absl::StatusOr<CpuList> cpus = ParseCpuList(v);
    absl::Status usable = cpus.ok() ? CheckOnline(*cpus) : cpus.status();
    if (usable.ok()) {
      c.tracer_cpus = *std::move(cpus);
    } else {
      warnings->push_back(std::string("memtrace: MEMTRACE_TRACER_CPUS=\"") + v + "\": " +
                          std::string(usable.message()) +
                          "; memtrace's threads run wherever the kernel puts them");
    }
  }
  return c;
}

namespace {

// MEMTRACE_ names that are no setting of the interposer but are read or set by memtrace's
// own tools: the interposer's marker for traced children, `memtrace run`'s interposer
// path, and the knobs of tests/ground_truth_stress_test.cc and bench/overhead_benchmark.
constexpr std::string_view kOtherNames[] = {"MEMTRACE_ROOT_PID", "MEMTRACE_PRELOAD",
                                            "MEMTRACE_STRESS_THREADS", "MEMTRACE_STRESS_OPS",
                                            "MEMTRACE_BENCH_MAX_THREADS"};

// Edits (insertions, deletions, substitutions) that turn `a` into `b`.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

void WarnUnknownSettings(const char* const* env, std::vector<std::string>* warnings) {
  if (env == nullptr) return;
  constexpr std::string_view kPrefix = "MEMTRACE_";
  for (const char* const* e = env; *e != nullptr; ++e) {
    const std::string_view entry = *e;
    if (entry.substr(0, kPrefix.size()) != kPrefix) continue;
    const std::string_view name = entry.substr(0, entry.find('='));
    auto known = [&](const auto& names) {
      return std::find(std::begin(names), std::end(names), name) != std::end(names);
    };
    if (known(kPreloadSettingNames) || known(kOtherNames)) continue;
    // The closest setting: a few edits away (a typo), or one whose name contains this
    // one's part after the prefix (MEMTRACE_DEPTH for MEMTRACE_STACK_DEPTH).
    std::string_view closest;
    size_t best = 4;
    const std::string_view part = name.substr(kPrefix.size());
    for (const std::string_view setting : kPreloadSettingNames) {
      size_t d = EditDistance(name, setting);
      if (part.size() >= 3 && setting.find(part) != std::string_view::npos) {
        d = std::min<size_t>(d, 3);
      }
      if (d < best) {
        best = d;
        closest = setting;
      }
    }
    std::string w =
        "memtrace: " + std::string(name) + " is not a memtrace setting and is ignored";
    if (!closest.empty()) {
      w += " (did you mean " + std::string(closest) + "?)";
    } else {
      w += "; the settings are";
      for (const std::string_view setting : kPreloadSettingNames) w += " " + std::string(setting);
    }
    warnings->push_back(std::move(w));
  }
}

bool FindInPath(const char* name, const char* dirs, char* out, size_t size) {
  for (const char* d = dirs;;) {
    const char* end = strchrnul(d, ':');
    const int n = end > d ? snprintf(out, size, "%.*s/%s", static_cast<int>(end - d), d, name)
                          : snprintf(out, size, "./%s", name);
    if (n > 0 && static_cast<size_t>(n) < size && access(out, X_OK) == 0) return true;
    if (*end == '\0') return false;
    d = end + 1;
  }
}

bool LoaderIgnoresPreload(const char* path, char* why, size_t size) {
  struct stat st;
  if (stat(path, &st) != 0) return false;
  struct statvfs fs;
  if (statvfs(path, &fs) == 0 && (fs.f_flag & ST_NOSUID) != 0) return false;
  if ((st.st_mode & S_ISUID) != 0 && st.st_uid != geteuid()) {
    snprintf(why, size, "set-user-ID (owner uid %u, this user %u)",
             static_cast<unsigned>(st.st_uid), static_cast<unsigned>(geteuid()));
    return true;
  }
  if ((st.st_mode & S_ISGID) != 0 && st.st_gid != getegid()) {
    snprintf(why, size, "set-group-ID (group gid %u, this user's %u)",
             static_cast<unsigned>(st.st_gid), static_cast<unsigned>(getegid()));
    return true;
  }
  return false;
}

std::string CapturePath(const std::string& pattern, int pid, int root_pid, int copy) {
  const std::string id =
      copy > 1 ? std::to_string(pid) + "." + std::to_string(copy) : std::to_string(pid);
  bool had_pid = false;
  const std::string out = ReplacePid(pattern, id, &had_pid);
  if (had_pid) return out;
  if (root_pid == 0 || pid == root_pid) return copy > 1 ? Tagged(out, std::to_string(copy)) : out;
  return Tagged(out, id);
}

std::string PidTaggedPath(const std::string& path, int pid) {
  return Tagged(path, std::to_string(pid));
}

std::string OtherCapturesGlob(const std::string& pattern) {
  constexpr std::string_view kAnyPid = "[0-9]*";
  bool had_pid = false;
  const std::string out = ReplacePid(pattern, kAnyPid, &had_pid);
  return (had_pid ? out : Tagged(out, kAnyPid)) + "*";
}

namespace {

constexpr std::string_view kPreloadName = "LD_PRELOAD=";

bool IsPreload(std::string_view entry) {
  return entry.substr(0, kPreloadName.size()) == kPreloadName;
}

// Calls fn(file) for each file an LD_PRELOAD value names, in order (ld.so separates them
// by colons or spaces). Each is a view into `value`, read no further than its end, so fn
// may write over what came before it.
template <typename Fn>
void ForEachPreloadFile(std::string_view value, Fn fn) {
  size_t i = 0;
  for (;;) {
    while (i < value.size() && (value[i] == ' ' || value[i] == ':')) ++i;
    if (i == value.size()) return;
    const size_t start = i;
    while (i < value.size() && value[i] != ' ' && value[i] != ':') ++i;
    fn(value.substr(start, i - start));
  }
}

// Whether the LD_PRELOAD entry `file` is this interposer: its name contains `marker`, or
// it is `own_path` (the path the loader has for it, which is the entry as given when it
// has a '/'), or, for an entry without a '/' (the loader searched for it), its file name.
// The last two find a copy of the library under another name.
bool IsThisLibrary(std::string_view file, std::string_view marker, std::string_view own_path) {
  if (file.find(marker) != std::string_view::npos) return true;
  if (own_path.empty()) return false;
  if (file == own_path) return true;
  const size_t slash = own_path.rfind('/');
  return file.find('/') == std::string_view::npos && slash != std::string_view::npos &&
         file == own_path.substr(slash + 1);
}

// Whether an LD_PRELOAD value names this interposer (IsThisLibrary).
bool PreloadNames(std::string_view value, std::string_view marker, std::string_view own_path) {
  bool named = false;
  ForEachPreloadFile(value, [&](std::string_view file) {
    named = named || IsThisLibrary(file, marker, own_path);
  });
  return named;
}

// The name part of "NAME=value", with the '='.
std::string_view NameOf(std::string_view entry) {
  const size_t eq = entry.find('=');
  return eq == std::string_view::npos ? entry : entry.substr(0, eq + 1);
}

bool HasName(const char* const* env, std::string_view name) {
  for (const char* const* e = env; e != nullptr && *e != nullptr; ++e) {
    if (std::string_view(*e).substr(0, name.size()) == name) return true;
  }
  return false;
}

// "LD_PRELOAD=" + library + ":" + the old value (or library alone for an empty one).
size_t RewrittenPreloadBytes(std::string_view entry, std::string_view library) {
  const std::string_view value = entry.substr(kPreloadName.size());
  return kPreloadName.size() + library.size() + (value.empty() ? 0 : 1 + value.size()) + 1;
}

}  // namespace

TracingEnvironmentSize MeasureTracingEnvironment(const char* const* env, std::string_view library,
                                                 std::string_view marker,
                                                 const char* const* tracing) {
  TracingEnvironmentSize size;
  bool preload_seen = false;
  for (const char* const* e = env; e != nullptr && *e != nullptr; ++e) {
    ++size.entries;
    const std::string_view entry(*e);
    if (!IsPreload(entry)) continue;
    preload_seen = true;
    if (PreloadNames(entry.substr(kPreloadName.size()), marker, library)) continue;
    size.changes = true;
    size.bytes += RewrittenPreloadBytes(entry, library);
  }
  if (!preload_seen) {
    size.changes = true;
    ++size.entries;
    size.bytes += kPreloadName.size() + library.size() + 1;
  }
  for (const char* const* t = tracing; t != nullptr && *t != nullptr; ++t) {
    if (HasName(env, NameOf(*t))) continue;
    size.changes = true;
    ++size.entries;
  }
  ++size.entries;  // the final nullptr
  return size;
}

void BuildTracingEnvironment(const char* const* env, std::string_view library,
                             std::string_view marker, const char* const* tracing,
                             const char** entries, char* bytes) {
  auto put = [&bytes](std::string_view text) {
    memcpy(bytes, text.data(), text.size());
    bytes += text.size();
  };
  bool preload_seen = false;
  for (const char* const* e = env; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!IsPreload(entry) || PreloadNames(entry.substr(kPreloadName.size()), marker, library)) {
      preload_seen = preload_seen || IsPreload(entry);
      *entries++ = *e;
      continue;
    }
    preload_seen = true;
    *entries++ = bytes;
    const std::string_view value = entry.substr(kPreloadName.size());
    put(kPreloadName);
    put(library);
    if (!value.empty()) {
      put(":");
      put(value);
    }
    *bytes++ = '\0';
  }
  if (!preload_seen) {
    *entries++ = bytes;
    put(kPreloadName);
    put(library);
    *bytes++ = '\0';
  }
  for (const char* const* t = tracing; t != nullptr && *t != nullptr; ++t) {
    if (!HasName(env, NameOf(*t))) *entries++ = *t;
  }
  *entries = nullptr;
}

void DropFromPreload(char** env, std::string_view marker, std::string_view own_path) {
  if (env == nullptr) return;
  for (char** e = env; *e != nullptr;) {
    if (!IsPreload(*e)) {
      ++e;
      continue;
    }
    // The kept entries are copied down over the string itself: `out` never passes the
    // file being read (a separator came between any two).
    char* const value = *e + kPreloadName.size();
    char* out = value;
    ForEachPreloadFile(value, [&](std::string_view file) {
      if (IsThisLibrary(file, marker, own_path)) return;
      if (out != value) *out++ = ' ';
      memmove(out, file.data(), file.size());
      out += file.size();
    });
    *out = '\0';
    if (out != value) {
      ++e;
      continue;
    }
    // Nothing kept: take the variable out, as unsetenv() would.
    for (char** d = e; *d != nullptr; ++d) d[0] = d[1];
  }
}

}  // namespace memtrace
