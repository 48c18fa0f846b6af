#pragma once
// Exponential ("galloping") search over a monotone predicate, for chained prefix blocks: a
// cache that holds block i of a chain holds blocks 0..i-1, so "holds block k" is true up to
// some k and false after. Finds that last true index in O(log k) probes.

#include <cstddef>

namespace infergrid {

// The last index in [lo, n) where `holds` is true, given holds(lo) is true and `holds` is
// true up to some index and false after it.
template <typename Pred>
size_t GallopLastTrue(size_t lo, size_t n, Pred holds) {
  size_t step = 1, hi = n;
  while (lo + step < n) {
    if (!holds(lo + step)) {
      hi = lo + step;
      break;
    }
    lo += step;
    step *= 2;
  }
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (holds(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace infergrid
