// Copyright 2026 The memtrace Authors.

#include "analysis/capture_name.h"

namespace memtrace {

size_t ExtensionDot(const std::string& path) {
  const size_t slash = path.rfind('/');
  const size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.rfind('.');
  return dot == std::string::npos || dot <= name_at ? std::string::npos : dot;
}

CaptureName SplitCaptureName(const std::string& path) {
  // The last extension of `p`, a prefix of `path` (so its file name begins where
  // path's does).
  auto extension = [](const std::string& p) {
    const size_t dot = ExtensionDot(p);
    return dot == std::string::npos ? std::string() : p.substr(dot + 1);
  };
  CaptureName name;
  name.stem = path;
  if (extension(name.stem) == "zst") {
    name.stem.erase(name.stem.rfind('.'));
    name.compressed = true;
  }
  name.extension = extension(name.stem);
  if (!name.extension.empty()) name.stem.resize(name.stem.size() - name.extension.size() - 1);
  return name;
}

std::string CaptureNameExtension(const std::string& path) {
  return SplitCaptureName(path).extension;
}

}  // namespace memtrace
