// Copyright 2026 The memtrace Authors.

#include "runtime/internal/cpu_list.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace memtrace {
namespace {

// A CPU number at text[*pos...], advancing *pos past it.
absl::StatusOr<uint32_t> ParseCpu(std::string_view text, size_t* pos) {
  const char* begin = text.data() + *pos;
  const char* end = text.data() + text.size();
  uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && value > CpuList::kMaxCpu)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CPU list \"", std::string(text), "\": the CPU number at position ", *pos + 1,
        " is above ", CpuList::kMaxCpu, ", the highest this system's CPU sets can name"));
  }
  if (ec != std::errc() || ptr == begin) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CPU list \"", std::string(text), "\": expected a CPU number at position ", *pos + 1,
        "; write it like 0-3,8 (numbers, ranges with '-', separated by ',')"));
  }
  *pos = static_cast<size_t>(ptr - text.data());
  return static_cast<uint32_t>(value);
}

}  // namespace

std::string CpuList::ToString() const {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    absl::StrAppend(&out, out.empty() ? "" : ",", cpus[i]);
    if (j > i) absl::StrAppend(&out, "-", cpus[j]);
    i = j + 1;
  }
  return out;
}

absl::StatusOr<CpuList> ParseCpuList(std::string_view text) {
  CpuList list;
  size_t pos = 0;
  while (pos < text.size()) {
    absl::StatusOr<uint32_t> first = ParseCpu(text, &pos);
    if (!first.ok()) return first.status();
    uint32_t last = *first;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      absl::StatusOr<uint32_t> second = ParseCpu(text, &pos);
      if (!second.ok()) return second.status();
      if (*second < *first) {
        return absl::InvalidArgumentError(absl::StrCat(
            "CPU list \"", std::string(text), "\": the range ", *first, "-", *second,
            " runs backwards; write the lower CPU first"));
      }
      last = *second;
    }
    for (uint32_t cpu = *first; cpu <= last; ++cpu) list.cpus.push_back(cpu);
    if (pos == text.size()) break;
    if (text[pos] != ',' || pos + 1 == text.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CPU list \"", std::string(text), "\": unexpected '", std::string(text.substr(pos, 1)), "' at position ",
          pos + 1, "; write it like 0-3,8 (numbers, ranges with '-', separated by ',')"));
    }
    ++pos;
  }
  std::sort(list.cpus.begin(), list.cpus.end());
  list.cpus.erase(std::unique(list.cpus.begin(), list.cpus.end()), list.cpus.end());
  return list;
}

CpuList AllowedCpus() {
  CpuList list;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return list;
  for (uint32_t cpu = 0; cpu <= CpuList::kMaxCpu; ++cpu) {
    if (CPU_ISSET(cpu, &set)) list.cpus.push_back(cpu);
  }
  return list;
}

CpuList OnlineCpus() {
  if (FILE* f = fopen("/sys/devices/system/cpu/online", "re")) {
    char text[4096] = {};
    const bool read = fgets(text, sizeof(text), f) != nullptr;
    fclose(f);
    if (read) {
      text[strcspn(text, "\n")] = '\0';
      absl::StatusOr<CpuList> list = ParseCpuList(text);
      if (list.ok() && !list->empty()) return *std::move(list);
    }
  }
  CpuList list;
  const long n = sysconf(_SC_NPROCESSORS_CONF);
  for (long cpu = 0; cpu < n && cpu <= static_cast<long>(CpuList::kMaxCpu); ++cpu) {
    list.cpus.push_back(static_cast<uint32_t>(cpu));
  }
  return list;
}

absl::Status CheckOnline(const CpuList& list) {
  const CpuList online = OnlineCpus();
  CpuList outside;
  for (uint32_t cpu : list.cpus) {
    if (!std::binary_search(online.cpus.begin(), online.cpus.end(), cpu)) {
      outside.cpus.push_back(cpu);
    }
  }
  if (outside.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "CPU ", outside.ToString(), " of the list ", list.ToString(),
      outside.cpus.size() == 1 ? " is" : " are", " not online on this machine (online: ",
      online.ToString(), "); name CPUs from those"));
}

absl::Status PinCallingThread(const CpuList& list) {
  if (list.empty()) return absl::OkStatus();
  cpu_set_t set;
  CPU_ZERO(&set);
  for (uint32_t cpu : list.cpus) CPU_SET(cpu, &set);
  const int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (err == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "could not restrict a memtrace thread to CPUs ", list.ToString(), ": ", strerror(err)));
}

void PlaceMemtraceThread(const char* name, const CpuList& list) {
  // Pinned first, named after: whoever sees the name (top, a test reading /proc) sees the
  // thread where it will stay.
  const absl::Status s = PinCallingThread(list);
  pthread_setname_np(pthread_self(), name);
  if (s.ok()) return;
  const std::string message =
      absl::StrCat("memtrace: ", name, ": ", s.message(), "; it runs unrestricted\n");
  // Best effort: nothing to do if stderr is gone.
  (void)!write(2, message.data(), message.size());
}

}  // namespace memtrace
