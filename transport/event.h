// Copyright 2026 The memtrace Authors.
//
// event.h: the fixed-size record that carries one traced operation from an allocating
// thread to the drainer.
//
// An `Event` is 32 bytes: four explicit-width words, trivially copyable, written by exactly
// one producer into its own ring (spsc_ring.h) and read by the drainer. Nothing in a record
// is a pointer the drainer dereferences; addresses are opaque numbers.
//
//   word   bits     alloc / remap target      free / resize / remap     scope enter/exit
//   ----   ------   ----------------------    ----------------------    ----------------
//   0      0..63    block address             block address             scope path id
//   1      0..47    size in bytes             new size (resize) / 0     0
//          48..55   EventKind                 EventKind                 EventKind
//          56..63   layer id                  layer id                  layer id
//   2      0..63    call site (return addr)   ticket of the allocation  steady-clock ns
//   3      0..31    scope path id in force    scope path id in force    parent path id
//          32..63   epoch                     epoch                     epoch
//
// Sizes fit in 48 bits because no user-space block on x86-64 or AArch64 can exceed the
// 47-bit address space; a larger size is refused before it is recorded (see Fits()).
//
// A remap that moves is two records published together: kRemap (old address, ticket of the
// old allocation), stamped with the epoch read before the move, immediately followed by
// kRemapTarget (new address, new size, call site), stamped with an epoch read after it.
// The drainer applies them in order, carrying the block's scope and site from one to the
// other, possibly across two epochs.
//
// A call stack (the interposer's, or any caller that unwinds) travels as kStackFrames
// records ahead of the allocation that uses it. The allocation's call-site word then holds
// the stack's 64-bit hash with bit 63 set (never a user-space address), and the stack
// records carry the frames under that hash:
//
//   word   bits     stack frames
//   ----   ------   ----------------------------------------------------
//   0      0..63    the stack's hash (bit 63 set), as in the allocation's site word
//   1      0..47    a frame (a return address below 2^48)
//          48..55   EventKind::kStackFrames
//          56..63   bits 0..1: frames in this record (1 or 2); bit 7: the stack's last record
//   2      0..63    the second frame, when there are two
//   3               scope | epoch, as for every record
//
// A thread sends a stack's frames the first time it uses the stack (it remembers recently
// sent hashes), so the drainer and sinks see a stack's frames before any record of that
// thread that names its hash; they keep the frames by hash for the whole capture.
//
// Tickets and epochs are the ordering information the drainer needs; ticket.h and
// epoch_clock.h say what they are and why they are enough.
//
// Thread safety: an Event is plain data. It is written only by its ring's producer before
// the release store that publishes it, and read only by the consumer after the matching
// acquire load (spsc_ring.h).

#ifndef MEMTRACE_TRANSPORT_EVENT_H_
#define MEMTRACE_TRANSPORT_EVENT_H_

#include <cstdint>
#include <type_traits>
#include <vector>

namespace memtrace {

// What an event records. The numeric values are part of the capture format: never reuse one.
enum class EventKind : uint8_t {
  kInvalid = 0,
  kAlloc = 1,          // a new block: address, size, call site
  kResize = 2,         // a block grew or shrank in place: address, new size, ticket
  kRemap = 3,          // a block moved; first half: old address and its ticket
  kRemapTarget = 4,    // second half of a move: new address, new size, call site
  kFree = 5,           // a block was released: address, ticket
  kScopeEnter = 6,     // a scope opened on this thread: path id, time
  kScopeExit = 7,      // a scope closed on this thread: path id, time
  kCensusUpdate = 8,   // a census entry changed: label id (word 0), signed change (word 2)
  kIntervalBegin = 9,  // an interval sink phase began: category (word 0), time
  kIntervalEnd = 10,   // an interval sink phase ended: category (word 0), time
  kArenaReset = 11,    // every live block of this layer was released at once
  kStackFrames = 12,   // frames of a call stack, keyed by its hash (see above)
  // A thread took a ring: kernel thread id (word 0), name (words 2-3, NUL-padded). Never
  // in a ring: a sink makes it from EventObserver::OnThreadStart() for its writer.
  kThreadStart = 13,
};

inline constexpr uint8_t kMaxEventKind = 13;

// Stack records (kStackFrames): the layer byte's flags.
inline constexpr uint8_t kStackFrameCountMask = 0x03;
inline constexpr uint8_t kStackLastRecord = 0x80;
// Set in every stack hash, so a site word that is a hash never equals a return address.
inline constexpr uint64_t kStackHashBit = uint64_t{1} << 63;

// Returns a stable lower-case name ("alloc", "remap_target", ...) or "invalid".
const char* EventKindName(EventKind kind) noexcept;

// Layer ids name the allocator or source an event came from (the seed's EventLayer). The
// first few are fixed; runtime/layer_table.h hands out the rest by name.
using LayerId = uint8_t;
using EventLayer = LayerId;

namespace layers {
inline constexpr LayerId kCpuHeap = 0;     // a malloc-family or general-purpose heap
inline constexpr LayerId kFrameArena = 1;  // a frame or arena allocator with bulk reset
inline constexpr LayerId kGpuHeap = 2;     // device memory
inline constexpr LayerId kCensus = 3;      // hand-reported bytes
inline constexpr LayerId kInterposer = 4;  // the LD_PRELOAD interposer
inline constexpr LayerId kFirstUserLayer = 16;
}  // namespace layers

struct Event {
  static constexpr uint64_t kSizeMask = (uint64_t{1} << 48) - 1;
  static constexpr uint64_t kMaxSize = kSizeMask;

  uint64_t word0;  // address, or scope/label/category id
  uint64_t word1;  // size (48) | kind (8) | layer (8)
  uint64_t word2;  // call site, ticket, value or time
  uint64_t word3;  // scope path id (32) | epoch (32)

  static constexpr bool Fits(uint64_t size) noexcept { return size <= kMaxSize; }

  static constexpr uint64_t PackKindSize(EventKind kind, LayerId layer,
                                         uint64_t size) noexcept {
    return (size & kSizeMask) | (uint64_t{static_cast<uint8_t>(kind)} << 48) |
           (uint64_t{layer} << 56);
  }
  static constexpr uint64_t PackScopeEpoch(uint32_t scope, uint32_t epoch) noexcept {
    return uint64_t{scope} | (uint64_t{epoch} << 32);
  }

  constexpr EventKind kind() const noexcept {
    return static_cast<EventKind>((word1 >> 48) & 0xff);
  }
  constexpr LayerId layer() const noexcept { return static_cast<LayerId>(word1 >> 56); }
  constexpr uint64_t size() const noexcept { return word1 & kSizeMask; }
  constexpr uint64_t address() const noexcept { return word0; }
  constexpr uint32_t scope() const noexcept { return static_cast<uint32_t>(word3); }
  constexpr uint32_t epoch() const noexcept { return static_cast<uint32_t>(word3 >> 32); }
};

// A kStackFrames record `e` read into the frames of its stack so far (`frames`, which the
// records of one ring fill in order): appends its one or two frames; true when it is the
// stack's last record, whose hash is e.word0. For the drainer's and the sinks' copies of
// stacks, which file the frames under that hash.
inline bool AppendStackFrames(const Event& e, std::vector<uint64_t>* frames) {
  const uint8_t flags = e.layer();
  frames->push_back(e.size());
  if ((flags & kStackFrameCountMask) == 2) frames->push_back(e.word2);
  return (flags & kStackLastRecord) != 0;
}

static_assert(sizeof(Event) == 32, "Event is a fixed 32-byte record");
static_assert(alignof(Event) == 8, "Event words are naturally aligned");
static_assert(std::is_trivially_copyable_v<Event>, "Events are copied as raw memory");
static_assert(std::is_standard_layout_v<Event>, "Event layout is part of the transport ABI");

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_EVENT_H_
