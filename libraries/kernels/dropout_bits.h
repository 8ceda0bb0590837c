// Tally's dropout random numbers, which its kernels and the tests that check them share: counter
// based, so that whether element i of a call's mask is kept depends on the seed and the counter
// (the states' offset at the call + i) alone, whatever thread computes it. A dropout descriptor's
// states buffer holds DropoutStates; each call that draws a mask advances its offset by the
// mask's size, so that successive calls draw different masks, and the same seed the same ones.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define TALLY_DROPOUT_HOST_DEVICE __host__ __device__
#else
#define TALLY_DROPOUT_HOST_DEVICE
#endif

namespace tally::libraries::kernels {

// What a dropout descriptor's states buffer holds (cudnnDropoutGetStatesSize's size).
struct DropoutStates {
  uint64_t seed;
  uint64_t offset;  // the counter of the next call's first element
};

// splitmix64's finaliser: every input bit changes about half the output bits.
TALLY_DROPOUT_HOST_DEVICE constexpr uint64_t MixBits(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 32 random bits below which an element is dropped: probability p of [0, 1).
TALLY_DROPOUT_HOST_DEVICE constexpr uint32_t DropThreshold(float p) {
  return static_cast<uint32_t>(static_cast<double>(p) * 4294967296.0);
}

// Whether the element at `counter` of the seed's stream is kept.
TALLY_DROPOUT_HOST_DEVICE constexpr bool DropoutKeeps(uint64_t seed, uint64_t counter,
                                                      uint32_t threshold) {
  return static_cast<uint32_t>(MixBits(seed ^ MixBits(counter)) >> 32) >= threshold;
}

// What a kept element is multiplied by.
TALLY_DROPOUT_HOST_DEVICE constexpr double KeptScale(float p) {
  return 1.0 / (1.0 - static_cast<double>(p));
}

}  // namespace tally::libraries::kernels

#undef TALLY_DROPOUT_HOST_DEVICE
