// Copyright 2026 The memtrace Authors.
//
// proto_writer.h: the few pieces of the protobuf wire format the pprof export needs.
//
// Why not libprotobuf: Bazel 4's proto_library/cc_proto_library rules need rules_proto and
// the protobuf source repository, which Bazel downloads; this workspace builds offline
// with Debian's packages only (WORKSPACE), and generating code with Debian's protoc from a
// genrule would add a second code generator to keep in step with the library's headers
// for one message type we only write. profile.proto's encoding uses four things: varints,
// zig-zag-free int64 as varint, length-delimited fields (strings, sub-messages, packed
// repeated varints) and field keys. That is this file. It writes, never reads; the test
// validates its output with `go tool pprof`, a real consumer.
//
// Thread safety: a ProtoWriter is used by one thread.

#ifndef MEMTRACE_ANALYSIS_INTERNAL_PROTO_WRITER_H_
#define MEMTRACE_ANALYSIS_INTERNAL_PROTO_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memtrace::analysis_internal {

class ProtoWriter {
 public:
  // Varint field (wire type 0): uint64, int64 (two's complement, as protobuf does), bool.
  void Varint(uint32_t field, uint64_t value) {
    Key(field, 0);
    RawVarint(value);
  }
  void Int64(uint32_t field, int64_t value) { Varint(field, static_cast<uint64_t>(value)); }
  // Length-delimited field (wire type 2): a string, bytes, or an encoded sub-message.
  void Bytes(uint32_t field, std::string_view bytes) {
    Key(field, 2);
    RawVarint(bytes.size());
    out_.append(bytes.data(), bytes.size());
  }
  void Message(uint32_t field, const ProtoWriter& message) { Bytes(field, message.out_); }
  // Packed repeated varints (proto3's default for repeated scalars).
  void Packed(uint32_t field, const std::vector<uint64_t>& values) {
    if (values.empty()) return;
    ProtoWriter packed;
    for (uint64_t v : values) packed.RawVarint(v);
    Bytes(field, packed.out_);
  }

  const std::string& data() const { return out_; }

 private:
  void Key(uint32_t field, uint32_t wire_type) { RawVarint((uint64_t{field} << 3) | wire_type); }
  void RawVarint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }

  std::string out_;
};

}  // namespace memtrace::analysis_internal

#endif  // MEMTRACE_ANALYSIS_INTERNAL_PROTO_WRITER_H_
