#pragma once
// 64-bit mixing shared by the engine model (block hashes) and the simulator (seeds).

#include <cstdint>

namespace infergrid {

// splitmix64's finalizer: cheap, deterministic, well spread.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace infergrid
