// The NCCL transport: the group's all-gather over every GPU of its nodes, as a training job
// would run it. The group's lowest rank makes the NCCL unique id and sends it to the others
// over MPI (point to point, polled: a member that never asks cannot block the leader). The
// collective itself runs on a thread of its own, because a GPU stuck in the driver can block
// any CUDA call; the engine aborts its communicators at the deadline, and a thread that still
// does not return is left behind and reported.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "fleet/mpi/mpi_link.hpp"
#include "fleet/mpi/transport.hpp"
#include "preflight/engine/collective_engine.hpp"
#include "run/bounded_task.hpp"

namespace preflight {

namespace {

using Json = nlohmann::json;

std::string to_hex(const std::vector<char>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::vector<char> from_hex(const std::string& text) {
  std::vector<char> out;
  const auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
    const int hi = value(text[i]);
    const int lo = value(text[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

// The leader's message for this round: the NCCL id in hex, or the reason it could not make one.
struct UniqueIdMessage {
  std::string id;
  std::string error;
};
// nullopt for a message of another round (a late one) or one that is not the leader's format:
// a broken or hostile leader must not make this rank throw.
std::optional<UniqueIdMessage> read_unique_id(const ReceivedMessage& got, int round) {
  if (got.problem != ReceivedMessage::Problem::none) return std::nullopt;
  const Json message = Json::parse(got.text, nullptr, false);
  if (message.is_discarded() || !message.is_object()) return std::nullopt;
  const auto r = message.find("round");
  const auto id = message.find("id");
  const auto error = message.find("error");
  if (r == message.end() || !r->is_number_integer() || r->get<std::int64_t>() != round ||
      id == message.end() || !id->is_string() || error == message.end() || !error->is_string()) {
    return std::nullopt;
  }
  return UniqueIdMessage{id->get<std::string>(), error->get<std::string>()};
}

class NcclTransport final : public GroupTransport {
 public:
  NcclTransport(MpiLink& link, CollectiveEngine* engine, std::vector<int> cuda_ordinals)
      : link_(link), engine_(engine), ordinals_(std::move(cuda_ordinals)) {}
  std::string name() const override { return "nccl"; }

  GroupWork run(const GroupTask& task) override {
    GroupWork work;
    const auto start = SteadyClock::now();
    const auto finish = [&](GroupWorkStatus status, std::string error) {
      work.status = status;
      work.error = std::move(error);
      work.seconds = Seconds(SteadyClock::now() - start).count();
      return work;
    };
    const int me = link_.rank();
    const bool leader = task.members.front() == me;
    std::vector<char> id;
    std::string problem;
    if (engine_ == nullptr) {
      problem = "this binary has no NCCL engine (built without CUDA)";
    } else if (std::string why = engine_->unavailable_reason(); !why.empty()) {
      problem = why;
    } else if (ordinals_.empty()) {
      problem = "no GPU usable by CUDA on this node";
    }
    if (leader) {
      if (problem.empty()) id = engine_->unique_id(problem);
      // The members wait for the id either way: an empty one tells them the leader failed.
      Json message = {{"round", task.round}, {"id", to_hex(id)}, {"error", problem}};
      for (int m : task.members) {
        if (m != me) {
          link_.send_text(m, FleetTag::unique_id,
                          message.dump(-1, ' ', false, Json::error_handler_t::replace));
        }
      }
      if (!problem.empty()) return finish(GroupWorkStatus::error, problem);
    } else {
      // Ids of earlier rounds that timed out may still be queued: only this round's counts.
      while (true) {
        const auto got =
            link_.receive_text(task.members.front(), FleetTag::unique_id, task.deadline);
        if (!got) {
          return finish(GroupWorkStatus::timeout, "no NCCL unique id from the group's leader");
        }
        const auto message = read_unique_id(*got, task.round);
        if (!message) continue;
        if (!message->error.empty()) {
          return finish(GroupWorkStatus::error,
                        "the group's leader could not start NCCL: " + message->error);
        }
        id = from_hex(message->id);
        break;
      }
      if (!problem.empty()) return finish(GroupWorkStatus::error, problem);
    }

    CollectiveJob job;
    job.unique_id = id;
    int first_rank = 0;
    int nranks = 0;
    std::vector<std::pair<int, int>> rank_ranges;  // per member: [first, end) of NCCL ranks
    for (std::size_t m = 0; m < task.members.size(); ++m) {
      const int gpus = m < task.member_gpus.size() ? task.member_gpus[m] : 1;
      if (task.members[m] == me) first_rank = nranks;
      rank_ranges.emplace_back(nranks, nranks + gpus);
      nranks += gpus;
    }
    job.nranks = nranks;
    job.first_rank = first_rank;
    job.cuda_ordinals = ordinals_;
    job.op = CollectiveOp::all_gather;
    job.sizes = task.sizes;
    job.iterations = task.iterations;
    job.seed = task.seed;
    job.deadline = task.deadline;
    job.cancel = std::make_shared<std::atomic<bool>>(false);
    job.corrupt_send = task.corrupt;
    job.slow_factor = task.slow_factor;
    job.hang = task.hang;

    CollectiveEngine* engine = engine_;
    auto worker = BoundedTask<CollectiveResult>::start([engine, job] { return engine->run(job); });
    // The engine aborts its communicators at the deadline; the grace covers the abort.
    if (worker.wait(task.deadline + grace::kFleetNcclAbort) != TaskEnd::returned) {
      job.cancel->store(true);
      work.thread_abandoned = true;
      return finish(GroupWorkStatus::timeout,
                    "the NCCL worker did not return (a GPU stuck in the driver?)");
    }
    const std::optional<CollectiveResult> returned = worker.take();
    if (!returned)
      return finish(GroupWorkStatus::error, "the NCCL worker threw: " + worker.error());
    const CollectiveResult& r = *returned;
    for (const auto& size : r.sizes) work.busbw_by_size.emplace_back(size.bytes, size.busbw_gbps);
    if (!r.sizes.empty()) work.busbw_gbps = r.sizes.back().busbw_gbps;
    // Corruption per NCCL source rank becomes corruption per source node.
    for (const auto& per_source : r.corrupt_from) {
      for (std::size_t s = 0; s < per_source.size(); ++s) {
        if (per_source[s] == 0) continue;
        for (std::size_t m = 0; m < rank_ranges.size(); ++m) {
          const int source = static_cast<int>(s);
          // Corruption between this node's own GPUs counts against this node.
          if (source >= rank_ranges[m].first && source < rank_ranges[m].second) {
            work.corrupt_from[task.members[m]] += per_source[s];
          }
        }
      }
    }
    work.verified = r.verified;
    if (r.timed_out)
      return finish(GroupWorkStatus::timeout, r.error.empty() ? "NCCL timed out" : r.error);
    if (!r.error.empty()) return finish(GroupWorkStatus::error, r.error);
    return finish(GroupWorkStatus::ok, "");
  }

 private:
  MpiLink& link_;
  CollectiveEngine* engine_;
  std::vector<int> ordinals_;
};

}  // namespace

std::unique_ptr<GroupTransport> make_nccl_transport(MpiLink& link, CollectiveEngine* engine,
                                                    std::vector<int> cuda_ordinals) {
  return std::make_unique<NcclTransport>(link, engine, std::move(cuda_ordinals));
}

}  // namespace preflight
