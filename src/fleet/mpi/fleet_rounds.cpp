#include "fleet/mpi/fleet_rounds.hpp"

#include <algorithm>
#include <map>

namespace preflight {

namespace {

constexpr std::uint64_t kSeedBase = 0x5eedf1ee7ull;

std::string describe_rank(int rank) {
  return "rank " + std::to_string(rank);
}

}  // namespace

std::string message_problem(const ReceivedMessage& message, const std::string& what) {
  switch (message.problem) {
    case ReceivedMessage::Problem::oversized:
      return "sent an oversized message as its " + what + " (" +
             (message.claimed_bytes < 0 ? std::string("over 2 GiB")
                                        : std::to_string(message.claimed_bytes) + " bytes") +
             "; the limit is " + std::to_string(kMaxControlMessageBytes) + ")";
    case ReceivedMessage::Problem::incomplete:
      return "stopped in the middle of sending its " + what;
    case ReceivedMessage::Problem::none:
      break;
  }
  return {};
}

std::vector<int> blamed_members(const std::vector<int>& members,
                                const std::vector<const GroupWork*>& works) {
  std::vector<int> blamed;
  const std::size_t n = members.size();
  if (n < 2) return blamed;
  const auto saw = [&](std::size_t receiver, int source) {
    if (works[receiver] == nullptr) return false;
    const auto it = works[receiver]->corrupt_from.find(source);
    return it != works[receiver]->corrupt_from.end() && it->second > 0;
  };
  for (std::size_t s = 0; s < n; ++s) {
    bool everywhere = true;
    for (std::size_t r = 0; r < n && everywhere; ++r) {
      if (r != s) everywhere = saw(r, members[s]);
    }
    bool sees_all = works[s] != nullptr;
    for (std::size_t o = 0; o < n && sees_all; ++o) {
      if (o != s) sees_all = saw(s, members[o]);
    }
    if (everywhere || sees_all) blamed.push_back(members[s]);
  }
  return blamed;
}

RoundResult RoundDriver::run_round(const RoundPlan& plan, const std::set<int>& shunned) {
  MpiLink& link = *run_.link;
  RoundResult out;
  out.record.index = plan.index;
  const double group_s = run_.timing.group_s;
  const auto round_start = SteadyClock::now();

  // Assignments first, so every group starts at about the same time.
  std::vector<Assignment> assignments;
  int own_group = -1;
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    Assignment a;
    a.round = plan.index;
    a.members = plan.groups[g].members;
    for (int m : a.members) a.member_gpus.push_back(gpus_[m]);
    a.sizes = run_.sizes;
    a.iterations = run_.iterations;
    a.seed = kSeedBase + static_cast<std::uint64_t>(plan.index);
    a.group_timeout_s = group_s;
    for (int m : a.members) {
      rounds_of_[m].insert(plan.index);
      if (m == 0) {
        own_group = static_cast<int>(g);
      } else {
        link.send_text(m, FleetTag::assignment, encode(a));
      }
    }
    assignments.push_back(std::move(a));
  }

  // works[g][i]: the report of member i of group g; rank 0's own is filled here.
  std::vector<std::vector<std::optional<GroupWork>>> works(plan.groups.size());
  std::map<int, std::pair<std::size_t, std::size_t>> where;  // rank -> (group, member)
  int awaited = 0;
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    works[g].resize(plan.groups[g].members.size());
    for (std::size_t i = 0; i < plan.groups[g].members.size(); ++i) {
      const int m = plan.groups[g].members[i];
      where[m] = {g, i};
      if (m != 0) ++awaited;
    }
  }
  if (own_group >= 0) {
    GroupWork own = run_.transport->run(task_for(run_, assignments[own_group]));
    if (own.thread_abandoned) threads_abandoned_ = true;
    const auto [g, i] = where[0];
    works[g][i] = std::move(own);
  }
  const auto deadline =
      round_start + std::chrono::duration_cast<SteadyClock::duration>(
                        std::chrono::duration<double>(group_s + run_.timing.report_slack_s));
  const std::string in_round = " in round " + std::to_string(plan.index);
  std::map<int, std::string> flagged;  // rank -> how it broke the protocol this round
  while (awaited > 0) {
    const auto message = link.receive_text(-1, FleetTag::report, deadline);
    if (!message) break;
    const int source = message->source;
    if (source <= 0 || shunned.count(source) > 0 || flagged.count(source) > 0) continue;
    std::string problem = message_problem(*message, "report" + in_round);
    std::optional<WorkReport> report;
    if (problem.empty()) {
      report = decode_work(message->text);
      if (!report) problem = "sent a malformed report" + in_round;
    }
    const auto it = where.find(source);
    if (report && report->round < plan.index) {
      // A late report of a round that timed out is no evidence now, and no lie either when the
      // sender was in that round.
      if (rounds_of_[source].count(report->round) > 0) continue;
      problem =
          "sent a report for round " + std::to_string(report->round) + ", which it was not in";
    } else if (report && report->round > plan.index) {
      problem = "sent a report for round " + std::to_string(report->round) + ", which had not " +
                "started," + in_round;
    } else if (report && it == where.end()) {
      problem = "sent a report" + in_round + ", which it was not in";
    } else if (report && works[it->second.first][it->second.second]) {
      problem = "sent two reports" + in_round;
    } else if (report) {
      const std::string why =
          work_report_problem(*report, source, plan.groups[it->second.first].members);
      if (!why.empty()) problem = "sent a report" + in_round + " that " + why;
    }
    if (!problem.empty()) {
      flagged[source] = problem;
      out.misbehaving.emplace_back(source, problem);
      // Nothing more is awaited from it; a second report's sender was counted already.
      if (it != where.end() && !works[it->second.first][it->second.second]) --awaited;
      continue;
    }
    auto& slot = works[it->second.first][it->second.second];
    if (report->work.thread_abandoned) threads_abandoned_ = true;
    slot = std::move(report->work);
    --awaited;
  }

  // One outcome per group.
  std::vector<double> busbw(plan.groups.size(), 0.0);
  std::vector<std::string> keys(plan.groups.size());
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    const auto& members = plan.groups[g].members;
    GroupReport report;
    report.members = members;
    FleetGroupRecord record;
    record.ranks = members;
    record.reference = plan.groups[g].reference;
    int total_gpus = 0;
    std::vector<const GroupWork*> present;
    std::string missing;
    std::string broke;  // a member that broke the protocol: its data is no evidence
    std::string error;
    std::string timeout;
    double min_busbw = -1;
    // The drilled member's own figure before pacing. Not the group's minimum with the partners'
    // figures: a partner a few percent slower than the drilled member's unpaced speed (a
    // descheduled rank on a loaded machine) would then set the reference and the ratio would
    // read above the factor (CI, stop 38: a 0.75 drill read above 0.8).
    double min_unslowed = -1;
    bool drilled = false;
    bool corrupt = false;
    for (std::size_t i = 0; i < members.size(); ++i) {
      total_gpus += gpus_[members[i]];
      if (const auto f = flagged.find(members[i]); f != flagged.end()) {
        if (broke.empty()) broke = describe_rank(members[i]) + " " + f->second;
        present.push_back(nullptr);
        continue;
      }
      const auto& w = works[g][i];
      present.push_back(w ? &*w : nullptr);
      if (!w) {
        missing += (missing.empty() ? "" : ", ") + describe_rank(members[i]);
        if (shunned.count(members[i]) == 0) out.newly_unresponsive.push_back(members[i]);
        continue;
      }
      record.duration_s = std::max(record.duration_s, w->seconds);
      if (w->status == GroupWorkStatus::error && error.empty()) {
        error = describe_rank(members[i]) + ": " + w->error;
      }
      if (w->status == GroupWorkStatus::timeout && timeout.empty()) {
        timeout = describe_rank(members[i]) + ": " + w->error;
      }
      if (!w->corrupt_from.empty()) corrupt = true;
      if (w->status == GroupWorkStatus::ok) {
        min_busbw = min_busbw < 0 ? w->busbw_gbps : std::min(min_busbw, w->busbw_gbps);
        record.iteration_se = std::max(record.iteration_se, w->busbw_rel_se);
        if (w->unslowed_busbw_gbps > 0) {
          drilled = true;
          min_unslowed = min_unslowed < 0 ? w->unslowed_busbw_gbps
                                          : std::min(min_unslowed, w->unslowed_busbw_gbps);
        }
      }
    }
    keys[g] = std::to_string(members.size()) + " nodes, " + std::to_string(total_gpus) + " GPUs";
    if (!missing.empty()) {
      report.outcome = GroupOutcome::timeout;
      report.detail = "no report from " + missing + " within the round";
      out.any_timeout = true;
    } else if (!broke.empty()) {
      report.outcome = GroupOutcome::fail;
      report.detail = broke;
    } else if (!error.empty()) {
      report.outcome = GroupOutcome::fail;
      report.detail = error;
    } else if (!timeout.empty()) {
      report.outcome = GroupOutcome::timeout;
      report.detail = timeout;
      out.any_timeout = true;
    } else if (corrupt) {
      report.outcome = GroupOutcome::corrupt;
      report.blamed = blamed_members(members, present);
      std::string blamed;
      for (int b : report.blamed) blamed += (blamed.empty() ? "" : ", ") + describe_rank(b);
      report.detail = "data arrived corrupt" + (blamed.empty() ? "" : "; blamed: " + blamed);
    } else {
      busbw[g] = std::max(min_busbw, 0.0);
      if (drilled) record.drill_unslowed_gbps = std::max(min_unslowed, 0.0);
    }
    record.busbw_gbps = busbw[g];
    out.reports.push_back(std::move(report));
    out.record.groups.push_back(std::move(record));
  }

  // Slow groups, against the median of comparable groups of this and earlier rounds, and only
  // where there are enough of them (fleet_speed.hpp).
  const std::vector<GroupSpeed> speeds = speed_.judge_round(busbw, keys);
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    GroupReport& report = out.reports[g];
    report.speed = speeds[g].judgement;
    report.groups_compared = speeds[g].groups_compared;
    out.record.groups[g].speed = std::string(to_string(speeds[g].judgement));
    out.record.groups[g].groups_compared = speeds[g].groups_compared;
    out.record.groups[g].median_gbps = speeds[g].median_gbps;
    out.record.groups[g].gap = speeds[g].gap;
    out.record.groups[g].noise = speeds[g].noise;
    if (speeds[g].judgement == SpeedJudgement::slow) {
      report.outcome = GroupOutcome::slow;
      report.detail = speeds[g].detail;
    } else if (report.outcome == GroupOutcome::ok && !speeds[g].detail.empty()) {
      report.detail = speeds[g].detail;  // below the factor, within the noise: says so
    }
  }
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    out.record.groups[g].outcome = std::string(to_string(out.reports[g].outcome));
    out.record.groups[g].detail = out.reports[g].detail;
  }
  return out;
}

}  // namespace preflight
