// Copyright 2026 The memtrace Authors.

#include "analysis/capture_writer.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sinks/capture_ends.h"
#include "sinks/jsonl_encoding.h"
#include "sinks/zstd_file_stream.h"

namespace memtrace {
namespace {

constexpr size_t kFlushBytes = size_t{1} << 20;

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The record's event, with the fields its line type has.
CaptureEvent EventOf(const CaptureRecord& r) {
  CaptureEvent e;
  e.type = static_cast<CaptureEventType>(static_cast<uint8_t>(r.type) -
                                         static_cast<uint8_t>(LineType::kAlloc));
  e.thread = r.thread;
  e.addr = r.addr;
  e.size = r.size;
  e.ticket = r.ticket;
  e.of = r.of;
  e.layer = r.layer;
  e.scope = r.scope;
  e.outer = r.outer;
  e.site = r.site;
  e.label = r.label;
  e.category = r.category;
  e.has_delta = r.has_delta;
  e.delta = r.delta;
  e.bytes = r.bytes;
  e.mono_ns = r.mono_ns;
  e.has_weight = r.has_weight;
  e.weight = r.weight;
  return e;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CaptureWriter>> CaptureWriter::Open(const std::string& path) {
  FILE* f = fopen(path.c_str(), "we");
  if (f == nullptr) {
    const int err = errno;
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot create capture file '", path, "': ", strerror(err), " (errno ", err,
        "); check that the directory exists and is writable"));
  }
  const bool binary = EndsWith(path, ".mtb") || EndsWith(path, ".mtb.zst");
  return std::unique_ptr<CaptureWriter>(
      new CaptureWriter(f, path, binary, EndsWith(path, ".zst")));
}

CaptureWriter::CaptureWriter(FILE* file, std::string path, bool binary, bool zstd)
    : file_(file), path_(std::move(path)), binary_(binary) {
  if (zstd) zstd_ = std::make_unique<ZstdFileStream>(/*level=*/3, /*checksum=*/true);
  if (binary_) encoder_.Magic();
}

CaptureWriter::~CaptureWriter() {
  if (file_ != nullptr) fclose(file_);
}

void CaptureWriter::Line(const std::string& json) {
  if (binary_) {
    encoder_.Json(json);
  } else {
    buffer_ += json;
    buffer_ += '\n';
  }
}

absl::Status CaptureWriter::Write(const CaptureRecord& r) {
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("capture '", path_, "' is closed"));
  }
  switch (r.type) {
    case LineType::kHeader:
      Line(r.raw);
      break;
    case LineType::kTrailer:
      // With the CRC-32 of this file's bytes before it, not its source's (unless the
      // source's must stay: KeepSourceChecksum()).
      if (absl::Status s = Flush(/*end=*/false); !s.ok()) return s;
      Line(keep_source_checksum_ ? r.raw : TrailerWithCrc32(r.raw, crc32_));
      break;
    case LineType::kLayer:
      Line(JsonLayerLine(r.id, r.name));
      break;
    case LineType::kScope:
      Line(JsonScopeLine(r.id, r.parent, r.name, r.path));
      break;
    case LineType::kSite:
      Line(JsonSiteLine(r.id, r.addr, r.frames, r.other));
      break;
    case LineType::kModule:
      Line(JsonModuleLine(r.path, r.start, r.end, r.offset, r.build_id));
      break;
    case LineType::kThread:
      Line(JsonThreadLine(r.thread, r.tid, r.name));
      break;
    default: {
      const CaptureEvent e = EventOf(r);
      if (binary_) {
        encoder_.Epoch(r.t, r.epoch);
        encoder_.Event(e);
        break;
      }
      if (!have_time_ || r.t != t_ || r.epoch != epoch_) {
        time_fields_ = JsonTimeFields(r.t, r.epoch);
        t_ = r.t;
        epoch_ = r.epoch;
        have_time_ = true;
      }
      AppendJsonEvent(e, time_fields_, &buffer_);
      buffer_ += '\n';
      break;
    }
  }
  if ((binary_ ? encoder_.size() : buffer_.size()) >= kFlushBytes) {
    return Flush(/*end=*/false);
  }
  return absl::OkStatus();
}

absl::Status CaptureWriter::Flush(bool end) {
  encoder_.Flush();  // staged binary records, if any
  size_t written = 0;
  bool ok;
  if (zstd_ != nullptr) {
    ok = zstd_->ok() && zstd_->Write(buffer_, end, file_, &written);
  } else {
    ok = fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size();
  }
  if (ok) {
    crc32_ = static_cast<uint32_t>(
        crc32_z(crc32_, reinterpret_cast<const Bytef*>(buffer_.data()), buffer_.size()));
  }
  buffer_.clear();
  if (!ok) {
    const int err = errno != 0 ? errno : EIO;
    return absl::DataLossError(absl::StrCat("writing capture '", path_, "' failed: ",
                                            strerror(err), " (errno ", err, ")"));
  }
  return absl::OkStatus();
}

absl::Status CaptureWriter::Finish() {
  if (file_ == nullptr) return absl::OkStatus();
  absl::Status status = Flush(/*end=*/true);
  if (fclose(file_) != 0 && status.ok()) {
    const int err = errno;
    status = absl::DataLossError(
        absl::StrCat("closing capture '", path_, "' failed: ", strerror(err)));
  }
  file_ = nullptr;
  return status;
}

}  // namespace memtrace
