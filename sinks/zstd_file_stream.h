// Copyright 2026 The memtrace Authors.
//
// zstd_file_stream.h: compresses bytes into one zstd frame written to a FILE* (the sink's
// ".zst" captures, `memtrace convert` to ".zst").
//
// Thread safety: one thread at a time.
//
// Example:
//   ZstdFileStream zstd(/*level=*/3, /*checksum=*/true);
//   size_t written = 0;
//   if (!zstd.ok() || !zstd.Write(bytes, /*end_frame=*/false, file, &written)) ...;
//   zstd.Write({}, /*end_frame=*/true, file, &written);   // the frame's end and checksum

#ifndef MEMTRACE_SINKS_ZSTD_FILE_STREAM_H_
#define MEMTRACE_SINKS_ZSTD_FILE_STREAM_H_

#include <cstdio>
#include <string>
#include <string_view>

namespace memtrace {

class ZstdFileStream {
 public:
  ZstdFileStream(int level, bool checksum);
  ~ZstdFileStream();
  ZstdFileStream(const ZstdFileStream&) = delete;
  ZstdFileStream& operator=(const ZstdFileStream&) = delete;

  // False when zstd could not make a context (out of memory).
  bool ok() const { return cctx_ != nullptr; }

  // Compresses `input`, flushes it (or, with `end_frame`, ends the frame) and writes the
  // compressed bytes to `file`, adding their count to `*written`. False on a compression
  // or write error, with errno set.
  bool Write(std::string_view input, bool end_frame, FILE* file, size_t* written);

 private:
  void* cctx_;  // ZSTD_CCtx*
  std::string out_;
};

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_ZSTD_FILE_STREAM_H_
