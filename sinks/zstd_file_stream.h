// Copyright 2026 The memtrace Authors.
//
// zstd_file_stream.h: compresses bytes into one zstd frame written to a FILE* (the sink's
// ".zst" captures, `memtrace convert` to ".zst").
//
// A capture may be cut short while it is written (a crash, a kill, a full disk), and its
// reader keeps what precedes the cut (analysis/capture_reader.h). zstd decodes a block
// only whole, so that is what the whole blocks before the cut hold: the stream ends a
// block at least every kBlockInputBytes of input, so that a cut loses at most that much
// of what was written, where one block per Write() would lose up to a whole write (the
// sink writes JsonlSink::kFlushBytes at a time, and a small capture is one write). Each
// block ended early costs some compression (its header, and entropy tables it may
// restate), which grows as blocks shrink.
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
  // or write error, with errno set. Every kBlockInputBytes of `input` end a block.
  bool Write(std::string_view input, bool end_frame, FILE* file, size_t* written);

  static constexpr size_t kBlockInputBytes = size_t{64} << 10;

 private:
  // One piece of Write()'s input, compressed with `directive` (a ZSTD_EndDirective).
  bool Compress(std::string_view input, int directive, FILE* file, size_t* written);

  void* cctx_;  // ZSTD_CCtx*
  std::string out_;
};

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_ZSTD_FILE_STREAM_H_
