// Copyright 2026 The memtrace Authors.
//
// byte_sampler.h: which allocations a sampled capture records (MEMTRACE_SAMPLE_BYTES = N,
// `memtrace run --sample=N`), and why the weighted estimates built from them are
// unbiased.
//
// The draw. Each thread lays the bytes its program requests end to end and marks them
// with a Poisson process of rate 1/N: a block is recorded when a mark falls inside it.
// In integers: a countdown C = 1 + floor(X), X exponential with mean N, so that
// P(C > k) = exp(-k/N) for k = 0, 1, 2, ... (a geometric law, memoryless on the
// integers). Each block of s bytes subtracts s; the block that brings C to 0 or below is
// recorded, and a fresh C is drawn. A block whose countdown had c left is recorded when
// c <= s, and, c being geometric whatever the earlier blocks took from it,
//
//     p(s) = P(C <= s) = 1 - exp(-s/N),        independently of every other block
//
// (their spans are disjoint). A request for 0 bytes is drawn as 1 byte (SampledBytes(),
// sinks/jsonl_encoding.h): glibc hands out a real block for it and the unsampled capture
// counts it.
//
// The estimator. The sink gives each recorded block the weight w = 1/p(s)
// (SampleWeight(), the same SampledBytes() rule); a reader counts a recorded block as w
// allocations of s*w bytes. With I_i = 1 when block i was recorded (Horvitz-Thompson):
//
//     count estimate  Ĉ = Σ I_i w_i            E[Ĉ] = Σ p_i/p_i = n
//     bytes estimate  B̂ = Σ I_i w_i s_i        E[B̂] = Σ s_i
//     Var[Ĉ] = Σ (1 - p_i)/p_i                  Var[B̂] = Σ s_i² (1 - p_i)/p_i
//
// so both are unbiased, and their variances come from the sizes alone. For s << N,
// (1 - p)/p ~ N/s: n blocks of s bytes give Ĉ a relative standard deviation of about
// sqrt(N/(n*s)), one over the square root of the samples expected; counts of small blocks
// are the noisy ones. For s >> N, p ~ 1 and the block is as good as exact.
//
// realloc keeps the meaning the unsampled capture gives it (preload/record.inc,
// ReallocSampled): a move is a release and a new allocation, a resize in place changes
// the size of the same allocation.
//   - A move gives the new block its own draw on its new size: a new allocation in both
//     captures, estimated as above. The old block's release is recorded when the old
//     block was.
//   - A resize in place keeps the block's draw and weight: it is recorded exactly when
//     the block was, and scaled by the block's weight. From its draw (at size s, weight
//     w = 1/p(s)) to its next move or release, a block that grew in place by G bytes adds
//     I*w*(s + G) to the allocated bytes, expectation s + G, variance
//     (s + G)² (1 - p)/p; a block of L bytes now adds I*w*L to the live bytes,
//     expectation L, variance L² (1 - p)/p. A block drawn small that grows in place a
//     long way keeps its small-block weight: still unbiased, with that larger variance.
//     (A new draw at each resize would tie the weight to the size again, but then the
//     resize would count as an allocation the program never made.)
//
// Rounding (analysis/analyzer.h): bytes are rounded per recorded block (size * weight,
// at most half a byte each); counts are the running sum of the weights of each (site,
// scope, layer) rounded, so each row is within half an allocation of its Σ w.
//
// Thread safety: the state is one thread's (ThreadState::sample_countdown and
// sample_random); the functions touch only what they are given. Hot path: noexcept, no
// allocation, no locks; a logarithm only when a block is recorded.

#ifndef MEMTRACE_PRELOAD_BYTE_SAMPLER_H_
#define MEMTRACE_PRELOAD_BYTE_SAMPLER_H_

#include <cmath>
#include <cstdint>

#include "sinks/jsonl_encoding.h"

namespace memtrace::preload_internal {

// A fresh countdown, 1 + floor(X) with X exponential of mean `period`, from the
// xorshift64* state `random` (advanced).
inline int64_t DrawCountdown(uint64_t period, uint64_t* random) noexcept {
  uint64_t x = *random;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *random = x;
  // u uniform on [0, 1) in steps of 2^-53, so 1 - u > 0 and the logarithm is finite.
  const double u = static_cast<double>((x * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
  const double bytes = -std::log1p(-u) * static_cast<double>(period);
  return bytes >= 9e18 ? INT64_MAX : 1 + static_cast<int64_t>(bytes);
}

// Starts a thread's sampling state from `seed` (any value; 0 is made 1, since xorshift
// stays at 0).
inline void SeedByteSampler(uint64_t period, uint64_t seed, int64_t* countdown,
                            uint64_t* random) noexcept {
  *random = seed | 1;
  *countdown = DrawCountdown(period, random);
}

// Whether a block of `size` bytes is recorded: true with probability
// 1 - exp(-SampledBytes(size)/period), independently of the blocks before it. The state
// must have been seeded (SeedByteSampler). Hot path.
[[nodiscard]] inline bool TakeByteSample(uint64_t period, uint64_t size, int64_t* countdown,
                                         uint64_t* random) noexcept {
  const uint64_t bytes = SampledBytes(size);
  // A block larger than any countdown is recorded (and never wraps the subtraction).
  if (__builtin_expect(bytes < static_cast<uint64_t>(*countdown), 1)) {
    *countdown -= static_cast<int64_t>(bytes);
    return false;
  }
  *countdown = DrawCountdown(period, random);
  return true;
}

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_BYTE_SAMPLER_H_
