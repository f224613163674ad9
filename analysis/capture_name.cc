// Copyright 2026 The memtrace Authors.

#include "analysis/capture_name.h"

namespace memtrace {

std::string CaptureNameExtension(const std::string& path) {
  const size_t slash = path.rfind('/');
  const size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  auto extension = [&](const std::string& p) {
    const size_t dot = p.rfind('.');
    return dot == std::string::npos || dot <= name_at ? std::string() : p.substr(dot + 1);
  };
  std::string plain = path;
  if (extension(plain) == "zst") plain.erase(plain.rfind('.'));
  return extension(plain);
}

}  // namespace memtrace
