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
  auto* cctx = static_cast<ZSTD_CCtx*>(cctx_);
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  out_.resize(ZSTD_CStreamOutSize());
  for (;;) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    const size_t left =
        ZSTD_compressStream2(cctx, &out, &in, end_frame ? ZSTD_e_end : ZSTD_e_flush);
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
