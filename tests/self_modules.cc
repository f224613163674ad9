// Copyright 2026 The memtrace Authors.

#include "tests/self_modules.h"

#include <fstream>
#include <sstream>
#include <string>

namespace memtrace {

std::vector<CaptureRecord> SelfExecutableModules() {
  std::vector<CaptureRecord> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode >> path;
    if (perms.find('x') == std::string::npos || path.empty() || path[0] != '/') continue;
    CaptureRecord m;
    m.type = LineType::kModule;
    m.path = path;
    m.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    m.end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    m.offset = std::stoull(offset, nullptr, 16);
    out.push_back(m);
  }
  return out;
}

}  // namespace memtrace
