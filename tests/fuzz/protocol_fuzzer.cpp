// The fleet's messages between ranks (src/fleet/mpi/fleet_protocol.hpp): rank 0 decodes local
// and work reports, the other ranks decode assignments, from whatever a peer sends. Every
// decoder gets every input and must not throw. A message that decodes must survive encode and
// decode as the same value: a decoded message is within the bounds the encoders keep, encode
// writes every field decode reads, and nlohmann prints doubles so that they parse back exactly.
// The one field encode changes on purpose is a local report's duration_s, rounded to the
// millisecond (local_summary_to_json): it is compared once rounded, and must then stay put.
#include <cstddef>
#include <cstdint>

#include "fleet/mpi/fleet_protocol.hpp"
#include "fuzz_support.hpp"
#include "json_mutator.hpp"

using namespace preflight;

namespace {

bool same(const LocalSummary& a, const LocalSummary& b) {
  return a.verdict == b.verdict && a.exit_code == b.exit_code && a.reason == b.reason &&
         a.findings == b.findings && a.figures == b.figures;
}

// duration_s apart (see the top of the file).
bool same(const LocalReport& a, const LocalReport& b) {
  return a.rank == b.rank && a.host == b.host && a.gpus == b.gpus && same(a.local, b.local);
}

// Only a local report has a duration.
template <typename Message>
double duration_of(const Message&) {
  return 0;
}
double duration_of(const LocalReport& r) {
  return r.local.duration_s;
}

bool same(const Assignment& a, const Assignment& b) {
  if (a.done != b.done) return false;
  if (a.done) return a.exit_code == b.exit_code;  // the end carries nothing else
  return a.round == b.round && a.members == b.members && a.member_gpus == b.member_gpus &&
         a.sizes == b.sizes && a.iterations == b.iterations && a.seed == b.seed &&
         a.group_timeout_s == b.group_timeout_s;
}

bool same(const WorkReport& a, const WorkReport& b) {
  const GroupWork& x = a.work;
  const GroupWork& y = b.work;
  return a.round == b.round && x.status == y.status && x.error == y.error &&
         x.seconds == y.seconds && x.busbw_by_size == y.busbw_by_size &&
         x.busbw_gbps == y.busbw_gbps && x.unslowed_busbw_gbps == y.unslowed_busbw_gbps &&
         x.busbw_rel_se == y.busbw_rel_se && x.corrupt_from == y.corrupt_from &&
         x.verified == y.verified && x.thread_abandoned == y.thread_abandoned;
}

// decode(encode(m)) == m for a message m that decode produced, and the one rounding of
// duration_s stable: a second trip changes nothing at all.
template <typename Message, typename Decode>
void round_trip(const std::optional<Message>& decoded, Decode decode, const char* what) {
  if (!decoded) return;
  const std::optional<Message> once = decode(encode(*decoded));
  if (!once || !same(*decoded, *once)) fuzz::violated(what);
  const std::optional<Message> twice = decode(encode(*once));
  if (!twice || !same(*once, *twice) || duration_of(*once) != duration_of(*twice)) {
    fuzz::violated(what);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(fuzz::as_text(data, size));
  // The decoders never throw: a malformed message reads as no message (nullopt).
  round_trip(decode_local(text), decode_local, "a local report does not survive encode/decode");
  round_trip(decode_assignment(text), decode_assignment,
             "an assignment does not survive encode/decode");
  round_trip(decode_work(text), decode_work, "a work report does not survive encode/decode");
  return 0;
}

// Structure-aware mutations (json_mutator.hpp).
extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  return preflight::fuzz::mutate_json(data, size, max_size, seed);
}
