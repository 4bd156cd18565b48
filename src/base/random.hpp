#pragma once
// Randomness from the operating system (std::random_device: getrandom on Linux). `random_engine`
// seeds a fast generator with a full seed sequence instead of one 32-bit word, so generators made
// at the same time in one process (one per host thread) do not share a small seed space;
// `fill_os_random` is for secrets (tokens), which never come from a seeded generator.

#include <cstddef>
#include <cstdint>
#include <random>

namespace rivetkit {

std::mt19937_64 random_engine();

void fill_os_random(std::uint8_t* out, std::size_t n);

}  // namespace rivetkit
