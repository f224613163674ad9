// Copyright 2026 The memtrace Authors.
//
// ticket.h: the identity of one allocation, as the drainer will see it.
//
// A ticket names the record that created an allocation: the id of the producer's ring and
// the record's position (sequence number) in that ring. It is unique for the life of a
// capture because ring ids are never handed to two live rings and a ring reused by a new
// thread keeps counting from where it stopped.
//
//   63            44 43                                   0
//   +---------------+--------------------------------------+
//   | ring id (20)  | position in the ring (44, wraps)     |
//   +---------------+--------------------------------------+
//
// Ticket 0 means "unknown". Ring ids start at 1, so a real ticket is never 0.
//
// Where space is short (the ticket table, the ledger) a ticket is kept in 48 bits: the
// ring id and the low 28 bits of the position (Truncate). That is enough to find the
// record again: a ticket is only looked up while its record is unread in its ring, and a
// ring holds at most 2^26 records, so the drainer recovers the full position from its own
// read position (see Drainer::Dependency).
//
// Why tickets exist: an address is not an identity. Thread A allocates X, thread B frees
// it, thread C gets X back from malloc; B's free and C's alloc sit in different rings and
// may reach the drainer in either order. A free that carries the ticket of the allocation
// it releases can only match that allocation, so the drainer pairs every free with its
// allocation exactly, whatever order the rings are read in. ticket_table.h says how the
// freeing thread learns the ticket without taking a lock.

#ifndef MEMTRACE_TRANSPORT_TICKET_H_
#define MEMTRACE_TRANSPORT_TICKET_H_

#include <cstdint>

namespace memtrace {

struct Ticket {
  static constexpr int kPositionBits = 44;
  static constexpr uint64_t kPositionMask = (uint64_t{1} << kPositionBits) - 1;
  static constexpr uint32_t kMaxRingId = (uint32_t{1} << (64 - kPositionBits)) - 1;

  static constexpr uint64_t Make(uint32_t ring_id, uint64_t position) noexcept {
    return (uint64_t{ring_id} << kPositionBits) | (position & kPositionMask);
  }
  static constexpr int kTruncatedPositionBits = 28;
  static constexpr uint64_t kTruncatedPositionMask =
      (uint64_t{1} << kTruncatedPositionBits) - 1;

  // The 48-bit form: ring id (20) | position (low 28).
  static constexpr uint64_t Truncate(uint64_t ticket) noexcept {
    return (uint64_t{RingId(ticket)} << kTruncatedPositionBits) |
           (Position(ticket) & kTruncatedPositionMask);
  }

  static constexpr uint32_t RingId(uint64_t ticket) noexcept {
    return static_cast<uint32_t>(ticket >> kPositionBits);
  }
  static constexpr uint64_t Position(uint64_t ticket) noexcept {
    return ticket & kPositionMask;
  }
};

// The ticket a release carries when its recorder had handed out one ring only, so it
// took no ticket from the ticket table (recorder.h, "one ring"). Ring id 0 is never a
// ring's, so it names no record; the drainer pairs such a release by address, which one
// ring's order makes exact, and writes it to captures as `of` 0.
inline constexpr uint64_t kSoleRingTicket = 1;

static_assert(Ticket::RingId(Ticket::Make(7, 12345)) == 7);
static_assert(Ticket::Position(Ticket::Make(7, 12345)) == 12345);
static_assert(Ticket::Make(1, 0) != 0, "a real ticket is never the unknown ticket");
static_assert(Ticket::Make(1, 0) > kSoleRingTicket, "nor the one-ring ticket");

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_TICKET_H_
