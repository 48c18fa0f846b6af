#include "common/block_hash.h"

// Header-only and inlined: a block is hashed in a few nanoseconds.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace infergrid {

BlockHash HashBlock(BlockHash parent, std::span<const uint32_t> tokens) {
  // XXH3 of the block's token ids (little-endian 32-bit), seeded with the parent's hash.
  uint64_t h = XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), parent);
  return h == 0 ? 1 : h;  // 0 is reserved for "no parent"
}

void AppendBlockHashes(std::span<const uint32_t> tokens, size_t block_size,
                       std::vector<BlockHash>* chain) {
  BlockHash parent = chain->empty() ? 0 : chain->back();
  for (size_t i = 0; i + block_size <= tokens.size(); i += block_size) {
    parent = HashBlock(parent, tokens.subspan(i, block_size));
    chain->push_back(parent);
  }
}

std::vector<BlockHash> HashBlocks(std::span<const uint32_t> tokens, size_t block_size) {
  std::vector<BlockHash> out;
  out.reserve(tokens.size() / block_size);
  AppendBlockHashes(tokens, block_size, &out);
  return out;
}

}  // namespace infergrid
