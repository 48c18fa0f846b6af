#include "common/block_hash.h"

#include "common/hash.h"

namespace infergrid {

BlockHash HashBlock(BlockHash parent, std::span<const uint32_t> tokens) {
  uint64_t h = Mix64(parent ^ 0x9e3779b97f4a7c15ull);
  for (uint32_t t : tokens) h = Mix64(h ^ (t + 0x9e3779b97f4a7c15ull));
  h = Mix64(h ^ tokens.size());
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
