#include "model/memory_ranges.hpp"

#include <algorithm>

namespace preflight {

namespace {

constexpr std::uint64_t kWordBytes = 4;

}  // namespace

MergedRanges merge_bad_chunks(std::vector<ChunkMismatch> chunks, std::uint64_t gap_words,
                              std::size_t max_ranges) {
  MergedRanges merged;
  std::sort(chunks.begin(), chunks.end(), [](const ChunkMismatch& a, const ChunkMismatch& b) {
    return a.first_word < b.first_word;
  });

  // Ranges are built in word indices and converted to bytes once closed.
  bool open = false;
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::uint64_t words = 0;
  auto close = [&] {
    if (!open) return;
    if (merged.ranges.size() < max_ranges) {
      merged.ranges.push_back(BadRange{first * kWordBytes, (last + 1) * kWordBytes, words});
    } else {
      merged.truncated = true;
    }
    open = false;
  };

  for (const ChunkMismatch& chunk : chunks) {
    merged.bad_words += chunk.bad_words;
    // A chunk reported with its indices swapped still covers both words.
    const std::uint64_t chunk_first = std::min(chunk.first_word, chunk.last_word);
    const std::uint64_t chunk_last = std::max(chunk.first_word, chunk.last_word);
    // Written as a subtraction so that last + 1 + gap cannot overflow near 2^64.
    const bool joins = open && (chunk_first <= last || chunk_first - last - 1 <= gap_words);
    if (joins) {
      last = std::max(last, chunk_last);
      words += chunk.bad_words;
      continue;
    }
    close();
    open = true;
    first = chunk_first;
    last = chunk_last;
    words = chunk.bad_words;
  }
  close();
  return merged;
}

}  // namespace preflight
