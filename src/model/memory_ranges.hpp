#pragma once
// The memory pattern test's bad words, merged into address ranges. Shared by the engine that
// runs the test (src/gpu/bandwidth_pattern.cpp) and the host tests
// (tests/checks/common/test_bandwidth_math.cpp), so both use the one definition.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "preflight/engine/bandwidth_engine.hpp"

namespace preflight {

// What the pattern kernel reports per chunk of the tested region: the count of bad words and
// the word indices (from the start of the region) of the first and last of them.
struct ChunkMismatch {
  std::uint64_t chunk = 0;       // chunk number
  std::uint64_t bad_words = 0;   // > 0
  std::uint64_t first_word = 0;  // region word index of the first bad word in the chunk
  std::uint64_t last_word = 0;   // ... and of the last
};
// Merges the chunks (any order; several patterns may report the same chunk) into byte ranges
// [first bad word, last bad word + 1) * 4. Taken by first_word, a chunk joins the range before
// it when at most `gap_words` good words separate them (first_word <= range's last word + 1 +
// gap_words; overlapping and adjacent chunks always join); the range's bad_words is the sum of
// its chunks' counts (a word bad under two patterns counts twice, as in PatternResult). Sorted
// by address; only the `max_ranges` lowest are kept, with `truncated` set when more would have
// been reported (the counts of the ranges left out still go into the total).
struct MergedRanges {
  std::vector<BadRange> ranges;
  bool truncated = false;
  std::uint64_t bad_words = 0;  // all chunks
};
MergedRanges merge_bad_chunks(std::vector<ChunkMismatch> chunks, std::uint64_t gap_words,
                              std::size_t max_ranges = kMaxBadRanges);

}  // namespace preflight
