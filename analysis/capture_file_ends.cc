// Copyright 2026 The memtrace Authors.

#include "analysis/capture_file_ends.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "analysis/trailer.h"
#include "sinks/binary_encoding.h"

namespace memtrace {
namespace {

// The most of each end of the file read.
constexpr size_t kEndBytes = size_t{4} << 20;

constexpr std::string_view kTrailerStart = "{\"type\":\"trailer\"";

// Reads `n` bytes at `offset`, or fewer at the end of the file.
std::string ReadAt(int fd, uint64_t offset, size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  out.resize(got);
  return out;
}

// The varint at text[at..end), or nullopt when it is not exactly one well-formed varint.
std::optional<uint64_t> VarintSpanning(std::string_view text, size_t at, size_t end) {
  uint64_t v = 0;
  int shift = 0;
  for (size_t i = at; i < end; ++i) {
    const auto byte = static_cast<uint8_t>(text[i]);
    v |= uint64_t{byte & 0x7fu} << shift;
    shift += 7;
    const bool last = (byte & 0x80) == 0;
    if (last != (i + 1 == end)) return std::nullopt;
  }
  return v;
}

// The header's JSON text: a JSONL capture's first line, a binary one's first record.
std::optional<std::string> HeaderText(std::string_view head) {
  if (!head.empty() && head[0] == '{') {
    const size_t end = head.find('\n');
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(head.substr(0, end));
  }
  if (!head.starts_with(kBinaryMagicStem) || head.size() < kBinaryMagicSize + 2) {
    return std::nullopt;
  }
  size_t at = kBinaryMagicSize;
  if (static_cast<uint8_t>(head[at++]) != 0x01) return std::nullopt;  // a JSON record
  uint64_t len = 0;
  for (int shift = 0; at < head.size() && shift < 64; shift += 7) {
    const auto byte = static_cast<uint8_t>(head[at++]);
    len |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) {
      if (len > head.size() - at) return std::nullopt;
      return std::string(head.substr(at, len));
    }
  }
  return std::nullopt;
}

// The trailer's JSON text: the last record of the file, whose end `tail` is; `*record`
// is where in `tail` its record starts (a line's first byte, a binary record's tag).
std::optional<std::string> TrailerText(std::string_view tail, bool binary, size_t* record) {
  if (!binary) {
    if (tail.empty() || tail.back() != '\n') return std::nullopt;
    tail.remove_suffix(1);
    const size_t start = tail.rfind('\n');
    if (start == std::string_view::npos) return std::nullopt;
    const std::string_view line = tail.substr(start + 1);
    if (line.substr(0, kTrailerStart.size()) != kTrailerStart) return std::nullopt;
    *record = start + 1;
    return std::string(line);
  }
  // A JSON record: tag 0x01, the length varint, then the text, which ends the file.
  const size_t start = tail.rfind(kTrailerStart);
  if (start == std::string_view::npos || start < 2) return std::nullopt;
  for (size_t width = 1; width <= 10 && width < start; ++width) {
    if (static_cast<uint8_t>(tail[start - width - 1]) != 0x01) continue;
    const std::optional<uint64_t> len = VarintSpanning(tail, start - width, start);
    if (len && *len == tail.size() - start) {
      *record = start - width - 1;
      return std::string(tail.substr(start));
    }
  }
  return std::nullopt;
}

}  // namespace

CaptureFileEnds ReadCaptureFileEnds(const std::string& path, bool with_header) {
  CaptureFileEnds ends;
  // Only a regular file is opened: opening a pipe would take the first reader's place
  // (its writer then writes to nobody), and its bytes cannot be read from their end.
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return ends;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ends;
  std::string head, tail;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const auto size = static_cast<uint64_t>(st.st_size);
    ends.file_bytes = size;
    const uint64_t head_bytes = with_header ? kEndBytes : kBinaryMagicStem.size();
    head = ReadAt(fd, 0, static_cast<size_t>(std::min<uint64_t>(size, head_bytes)));
    const uint64_t tail_bytes = std::min<uint64_t>(size, kEndBytes);
    tail = ReadAt(fd, size - tail_bytes, static_cast<size_t>(tail_bytes));
  }
  close(fd);
  ends.binary = head.starts_with(kBinaryMagicStem);
  if (with_header) ends.header = HeaderText(head);
  size_t record = 0;
  ends.trailer = TrailerText(tail, ends.binary, &record);
  if (ends.trailer) ends.trailer_offset = ends.file_bytes - tail.size() + record;
  return ends;
}

std::optional<uint32_t> Crc32BeforeTrailer(const std::string& path,
                                           const CaptureFileEnds& ends) {
  if (!ends.trailer) return std::nullopt;
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  // The file as it is now must be the one whose ends were read.
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != ends.file_bytes) {
    close(fd);
    return std::nullopt;
  }
  constexpr size_t kChunk = size_t{1} << 20;
  std::string chunk(kChunk, '\0');
  uLong crc = crc32_z(0, nullptr, 0);
  uint64_t at = 0;
  while (at < ends.trailer_offset) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, ends.trailer_offset - at));
    const ssize_t r = pread(fd, chunk.data(), want, static_cast<off_t>(at));
    if (r <= 0) {
      close(fd);
      return std::nullopt;
    }
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<size_t>(r));
    at += static_cast<uint64_t>(r);
  }
  close(fd);
  return static_cast<uint32_t>(crc);
}

std::optional<bool> MatchesTrailerChecksum(const std::string& path) {
  const CaptureFileEnds ends = ReadCaptureFileEnds(path, /*with_header=*/false);
  if (!ends.trailer) return std::nullopt;
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(*ends.trailer);
  if (!t.ok() || !t->crc32) return std::nullopt;
  const std::optional<uint32_t> crc = Crc32BeforeTrailer(path, ends);
  if (!crc) return std::nullopt;
  return *crc == *t->crc32;
}

std::future<std::optional<bool>> MatchTrailerChecksumAside(const std::string& path) {
  try {
    return std::async(std::launch::async, [path] { return MatchesTrailerChecksum(path); });
  } catch (const std::system_error&) {
    std::promise<std::optional<bool>> here;
    here.set_value(MatchesTrailerChecksum(path));
    return here.get_future();
  }
}

absl::Status ExplainReadError(const std::string& path, absl::Status error) {
  if (error.ok() || MatchesTrailerChecksum(path) != false) return error;
  return absl::Status(
      error.code(),
      absl::StrCat("it is damaged: its bytes differ from those its trailer's checksum (crc32) "
                   "was computed over, so it was changed after it was written (a byte "
                   "flipped on disk, a record edited); record it again. Reading it stopped "
                   "here: ",
                   error.message()));
}

}  // namespace memtrace
