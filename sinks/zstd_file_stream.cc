// Copyright 2026 The memtrace Authors.

#include "sinks/zstd_file_stream.h"

#include <cerrno>

#include <zstd.h>

namespace memtrace {

ZstdFileStream::ZstdFileStream(int level, bool checksum) : cctx_(ZSTD_createCCtx()) {
  if (cctx_ == nullptr) return;
  auto* cctx = static_cast<ZSTD_CCtx*>(cctx_);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, checksum ? 1 : 0);
}

ZstdFileStream::~ZstdFileStream() { ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_)); }

bool ZstdFileStream::Write(std::string_view input, bool end_frame, FILE* file,
                           size_t* written) {
  // Each piece ends with ZSTD_e_flush, which ends the block: a reader decodes it as soon
  // as it has it. The last piece ends the frame instead when asked; an empty `input` is
  // one empty piece.
  do {
    const std::string_view piece = input.substr(0, kBlockInputBytes);
    input.remove_prefix(piece.size());
    const ZSTD_EndDirective directive =
        end_frame && input.empty() ? ZSTD_e_end : ZSTD_e_flush;
    if (!Compress(piece, directive, file, written)) return false;
  } while (!input.empty());
  return true;
}

bool ZstdFileStream::Compress(std::string_view input, int directive, FILE* file,
                              size_t* written) {
  auto* cctx = static_cast<ZSTD_CCtx*>(cctx_);
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  out_.resize(ZSTD_CStreamOutSize());
  for (;;) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    const size_t left =
        ZSTD_compressStream2(cctx, &out, &in, static_cast<ZSTD_EndDirective>(directive));
    if (ZSTD_isError(left)) {
      errno = EIO;
      return false;
    }
    if (out.pos > 0 && fwrite(out_.data(), 1, out.pos, file) != out.pos) return false;
    *written += out.pos;
    if (left == 0 && in.pos == in.size) return true;
  }
}

}  // namespace memtrace
