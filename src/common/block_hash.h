#pragma once
// The chained prefix-block hash shared by the engine model (its KV cache keys), the gateway
// and the planner (their prefix indexes): a full block of B token ids is identified by a hash
// of its parent block's hash and its tokens, so equal prefixes give equal hash chains and a
// block's hash names its whole prefix.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace infergrid {

using BlockHash = uint64_t;

// The hash of a full block given its parent's hash (0 for the first block); never 0.
// XXH3-64 of the token ids as little-endian 32-bit integers, seeded with the parent's hash.
BlockHash HashBlock(BlockHash parent, std::span<const uint32_t> tokens);

// The chained hashes of every full block of `tokens` (a partial last block has none).
std::vector<BlockHash> HashBlocks(std::span<const uint32_t> tokens, size_t block_size);

// Appends to `chain` the hashes of the full blocks of `tokens`, continuing from its last.
void AppendBlockHashes(std::span<const uint32_t> tokens, size_t block_size,
                       std::vector<BlockHash>* chain);

}  // namespace infergrid
