// Copyright 2026 The memtrace Authors.
//
// preload/byte_sampler.h: each block of s bytes is recorded with probability
// 1 - exp(-s/N), whatever came before it. Counts of recorded blocks are checked against
// the binomial law they must follow, within six of its standard deviations (a correct
// sampler fails one check with probability about 2e-9); the seeds are fixed, so a run is
// repeatable.

#include "preload/byte_sampler.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace memtrace::preload_internal {
namespace {

struct Sampler {
  Sampler(uint64_t period, uint64_t seed) : period(period) {
    SeedByteSampler(period, seed, &countdown, &random);
  }
  bool Take(uint64_t size) { return TakeByteSample(period, size, &countdown, &random); }
  uint64_t period;
  int64_t countdown = 0;
  uint64_t random = 0;
};

double Probability(uint64_t size, uint64_t period) {
  return -std::expm1(-static_cast<double>(size) / static_cast<double>(period));
}

// `recorded` of `n` independent trials of probability p: within six standard deviations.
void ExpectBinomial(uint64_t recorded, uint64_t n, double p, const char* what,
                    uint64_t size) {
  const double mean = static_cast<double>(n) * p;
  const double sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
  EXPECT_LE(std::fabs(static_cast<double>(recorded) - mean), 6 * sd + 1e-9)
      << what << ": size " << size << ", " << recorded << " of " << n << " recorded, "
      << mean << " expected (sd " << sd << ")";
}

// Blocks of many sizes interleaved: each size's share recorded is its own p, however the
// countdown was left by the blocks before it.
TEST(ByteSamplerTest, EachSizeIsRecordedWithProbabilityOneMinusExpOfSizeOverPeriod) {
  constexpr uint64_t kPeriod = 4096;
  const std::vector<uint64_t> sizes = {1, 8, 24, 100, 1000, 2048, 4096, 6000, 16384, 65536};
  std::vector<uint64_t> recorded(sizes.size()), trials(sizes.size());
  constexpr uint64_t kDraws = 2000000;
  Sampler s(kPeriod, 0x9e3779b97f4a7c15);
  uint64_t lcg = 1;
  for (uint64_t i = 0; i < kDraws; ++i) {
    // Sizes in a pseudo-random order: which size follows which varies.
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    const size_t j = (lcg >> 33) % sizes.size();
    ++trials[j];
    recorded[j] += s.Take(sizes[j]);
  }
  for (size_t j = 0; j < sizes.size(); ++j) {
    ExpectBinomial(recorded[j], trials[j], Probability(sizes[j], kPeriod), "interleaved",
                   sizes[j]);
  }
}

// The first block after a recorded one starts on a fresh countdown: it must have the same
// p as any other. (A countdown of floor(X) would record it with 1 - exp(-(s+1)/N), which
// at s = 1 and N = 16 is nearly twice p.)
TEST(ByteSamplerTest, TheBlockAfterARecordedOneHasTheSameProbability) {
  constexpr uint64_t kPeriod = 16;
  constexpr uint64_t kTrials = 400000;
  for (const uint64_t size : {uint64_t{1}, uint64_t{4}, uint64_t{16}}) {
    Sampler s(kPeriod, 12345 + size);
    uint64_t recorded = 0;
    for (uint64_t i = 0; i < kTrials; ++i) {
      ASSERT_TRUE(s.Take(1000 * kPeriod));  // p = 1 - exp(-1000): a fresh countdown after
      recorded += s.Take(size);
    }
    ExpectBinomial(recorded, kTrials, Probability(size, kPeriod), "after a record", size);
  }
}

// A request for nothing is drawn as one byte, the size its weight is computed from
// (SampleWeight()).
TEST(ByteSamplerTest, ZeroBytesAreDrawnAsOne) {
  constexpr uint64_t kPeriod = 8;
  constexpr uint64_t kTrials = 400000;
  Sampler s(kPeriod, 777);
  uint64_t recorded = 0;
  for (uint64_t i = 0; i < kTrials; ++i) recorded += s.Take(0);
  ExpectBinomial(recorded, kTrials, Probability(1, kPeriod), "zero bytes", 0);
  EXPECT_DOUBLE_EQ(SampleWeight(0, kPeriod), SampleWeight(1, kPeriod));
  EXPECT_DOUBLE_EQ(SampleWeight(1, kPeriod), 1 / Probability(1, kPeriod));
}

// A block larger than the countdown's range is always recorded.
TEST(ByteSamplerTest, HugeBlocksAreAlwaysRecorded) {
  Sampler s(4096, 99);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(s.Take(~uint64_t{0}));
}

}  // namespace
}  // namespace memtrace::preload_internal
