// Writes the corpus of real nodes (docs/judge.md#the-corpus-of-real-nodes): each
// facts/<node>.json of the nodes folder (with facts/_extra.json) becomes the verdict document
// `preflight run` would write on a healthy node of that kind, <node>.json beside facts/. Every
// check's readings come from the check's own typed readings and to_json (corpus_readings.hpp),
// so the corpus cannot drift from the format the checks write and `preflight judge` reads. The
// document has no findings, and a top-level "corpus" block (ignored by `preflight judge`) that
// names the sources and lists every value that is NOT a published figure (placeholders such as
// idle temperatures, figures taken from a sibling machine, derived values).
//
//   build/tests/corpus/make_corpus tests/data/nodes          # rewrites
//   tests/data/nodes/<node>.json build/tests/corpus/make_corpus --check tests/data/nodes  # exit 1
//   if a file is not what it writes
//
// The files are checked in; the corpus tests (tests/corpus/) read them, not this tool.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "corpus/writer/corpus_node.hpp"
#include "corpus/writer/corpus_readings.hpp"
#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"
#include "report/atomic_file.hpp"

namespace preflight::corpus {

namespace {

// A facts file is some 15 KiB and a node file some 60 KiB: far above that is not a corpus file.
constexpr std::size_t kMaxFactsBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxNodeBytes = std::size_t{16} << 20;
constexpr int kMaxNesting = 64;

Json read_json(const std::string& path) {
  const std::string text = read_bounded_file(path, kMaxFactsBytes);
  if (json_nesting_depth(text, kMaxNesting) > kMaxNesting) {
    throw InvalidInput(path + ": nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InvalidInput(path + ": not JSON: " + e.what());
  }
}

Json check_json(const char* name, Json readings, const std::string& summary) {
  return {{"name", name},
          {"status", "pass"},
          {"duration_s", 0.0},
          {"summary", summary},
          {"skip_reason", ""},
          {"findings", Json::array()},
          {"metrics", Json::object()},
          {"matrices", Json::array()},
          {"readings", std::move(readings)}};
}

Json skipped_json(const char* name, const std::string& why) {
  return {{"name", name},
          {"status", "skip"},
          {"duration_s", 0.0},
          {"summary", "not run"},
          {"skip_reason", why},
          {"findings", Json::array()},
          {"metrics", Json::object()},
          {"matrices", Json::array()},
          {"readings", nullptr}};
}

// The figure _extra.json adds, else the facts file's.
Json figure(const NodeFacts& node, const char* key) {
  Json added = added_figure(node, key);
  return added.is_null() ? published_figure(node, key) : added;
}

std::vector<std::pair<double, double>> all_at_once_of(const NodeFacts& node) {
  std::vector<std::pair<double, double>> pairs;
  const Json given = added_figure(node, "pcie_all_at_once");
  if (given.is_null()) return pairs;
  for (const Json& pair : given) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number()) {
      throw InvalidInput("pcie_all_at_once: expected [h2d, d2h] GB/s per GPU");
    }
    pairs.emplace_back(pair[0].get<double>(), pair[1].get<double>());
  }
  return pairs;
}

Json checks_json(const NodeFacts& n, Json& figures_used) {
  const std::string no_figure = "corpus: no published figure for this machine";
  Json checks = Json::array();
  checks.push_back(check_json("inventory", inventory_readings(n),
                              std::to_string(n.gpus.size()) + " x " + n.gpu_name));

  const Json gemm = figure(n, "gemm_bf16_tflops");
  checks.push_back(gemm.is_null()
                       ? skipped_json("gemm", no_figure)
                       : check_json("gemm", gemm_readings(n, figure_value(gemm, "gemm")), "bf16"));

  const Json h2d = figure(n, "pcie_h2d_gbps");
  Json d2h = figure(n, "pcie_d2h_gbps");
  if (d2h.is_null()) d2h = h2d;  // one figure for both directions where only one is published
  if (h2d.is_null()) {
    checks.push_back(skipped_json("pcie", no_figure));
  } else {
    checks.push_back(
        check_json("pcie",
                   pcie_readings(n, figure_value(h2d, "pcie_h2d_gbps"),
                                 figure_value(d2h, "pcie_d2h_gbps"), all_at_once_of(n)),
                   "pcie"));
  }

  const Json pair = figure(n, "nvlink_pair_unidir_gbps");
  checks.push_back(
      pair.is_null()
          ? skipped_json("nvlink", no_figure)
          : check_json("nvlink", nvlink_readings(n, figure_value(pair, "nvlink")), "nvlink"));

  // Only _extra.json gives the hbm figure: the facts' hbm_copy_gbps counts other bytes.
  const Json hbm = added_figure(n, "hbm_traffic_gbps");
  checks.push_back(hbm.is_null()
                       ? skipped_json("hbm", no_figure)
                       : check_json("hbm", hbm_readings(n, figure_value(hbm, "hbm")), "hbm"));

  const Json allgather = published_figure(n, "nccl_allgather_busbw_gbps");
  const Json allreduce = published_figure(n, "nccl_allreduce_busbw_gbps");
  const auto value = [](const Json& figure, const char* key) {
    return figure.is_null() ? std::nullopt : std::optional<double>(figure_value(figure, key));
  };
  if (allgather.is_null() && allreduce.is_null()) {
    checks.push_back(skipped_json("nccl", no_figure));
  } else {
    checks.push_back(check_json(
        "nccl",
        nccl_readings(n, value(allgather, "nccl_allgather"), value(allreduce, "nccl_allreduce")),
        "nccl"));
  }

  const RdmaReadings rdma = rdma_readings(n);
  const Json skip_rdma = added_figure(n, "skip_rdma");
  if (!skip_rdma.is_null()) {
    if (!skip_rdma.is_string()) throw InvalidInput("skip_rdma: expected the reason, a text");
    checks.push_back(skipped_json("rdma", "corpus: " + skip_rdma.get<std::string>()));
  } else if (rdma.devices.empty()) {
    checks.push_back(skipped_json("rdma", "corpus: the source lists no RDMA device"));
  } else {
    checks.push_back(check_json("rdma", rdma, "rdma"));
  }

  figures_used = Json::object();
  const std::pair<const char*, const Json*> used[] = {{"gemm_bf16_tflops", &gemm},
                                                      {"pcie_h2d_gbps", &h2d},
                                                      {"pcie_d2h_gbps", &d2h},
                                                      {"nvlink_pair_unidir_gbps", &pair},
                                                      {"hbm_traffic_gbps", &hbm},
                                                      {"nccl_allgather_busbw_gbps", &allgather},
                                                      {"nccl_allreduce_busbw_gbps", &allreduce}};
  for (const auto& [key, figure] : used) {
    if (!figure->is_null()) figures_used[key] = *figure;
  }
  return checks;
}

Json field_or(const Json& facts, const char* key, Json fallback) {
  const auto it = facts.find(key);
  return it == facts.end() ? fallback : *it;
}

Json document_json(const NodeFacts& n) {
  Json figures_used;
  Json checks = checks_json(n, figures_used);

  Json system_gpus = Json::array();
  for (const GpuFacts& g : n.gpus) {
    system_gpus.push_back({{"index", g.index},
                           {"name", n.gpu_name},
                           {"uuid", ""},
                           {"pci_bus_id", g.bus_id},
                           {"serial", ""}});
  }
  Json sources = field_or(n.facts, "sources", Json::array());
  for (const Json& s : field_or(n.extra, "sources", Json::array())) sources.push_back(s);
  Json assumed = n.assumed;
  assumed.push_back("idle temperature " + std::to_string(kIdleTemperatureC) +
                    " C, ECC counters 0, no MIG, persistence on, no other process: a healthy "
                    "idle GPU (no source publishes these per node)");
  assumed.push_back(
      "driver 580.65.06 and CUDA 13.0: the lent GPU machines' branch, not the "
      "source's");
  assumed.push_back(
      "one sample figure for every GPU, link or pair: the sources give one figure "
      "per machine, not per GPU");

  Json j = Json::object();
  j["schema"] = "preflight.verdict/1";
  j["tool"] = {{"name", "preflight"}, {"version", "corpus"}, {"git", ""}};
  j["host"] = n.node;
  j["started_at"] = "2026-11-25T00:00:00Z";
  j["duration_s"] = 0.0;
  j["profile"] = "quick";
  j["argv"] = {"tests/corpus/writer/make_corpus.cpp"};  // the tool that wrote it, by its source
  j["system"] = {{"driver_version", kDriverVersion}, {"cuda_driver", "13.0"},
                 {"cuda_runtime", "13.0"},           {"nccl", ""},
                 {"gpus", std::move(system_gpus)},   {"libraries", Json::array()}};
  j["verdict"] = "pass";
  j["exit_code"] = 0;
  j["reason"] = "";
  j["injected_faults"] = Json::array();
  j["findings"] = Json::array();
  j["checks"] = std::move(checks);
  j["burnin"] = nullptr;
  j["passes"] = Json::array();
  j["first_failed_pass"] = nullptr;
  j["thresholds"] = {{"sku", n.sku},
                     {"sku_name", ""},
                     {"detected_by", "corpus"},
                     {"overrides_file", ""},
                     {"node_shape", n.node_shape.empty() ? Json() : Json(n.node_shape)},
                     {"node_shape_by", n.node_shape_by},
                     {"values", Json::object()}};
  j["rejudged"] = nullptr;
  j["corpus"] = {{"title", n.facts.at("title")},
                 {"sources", std::move(sources)},
                 {"figures_used", std::move(figures_used)},
                 {"assumed", std::move(assumed)},
                 {"notes", field_or(n.facts, "notes", "")},
                 {"missing", field_or(n.facts, "missing", Json::array())}};
  return j;
}

int run(const std::string& nodes_dir, bool check_only) {
  namespace fs = std::filesystem;
  const fs::path facts_dir = fs::path(nodes_dir) / "facts";
  const Json extras = read_json((facts_dir / "_extra.json").string());
  if (!extras.is_object()) throw InvalidInput("_extra.json: expected an object");
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(facts_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0 && name[0] != '_') {
      names.push_back(name);
    }
  }
  if (error) throw InvalidInput(facts_dir.string() + ": cannot list: " + error.message());
  std::sort(names.begin(), names.end());

  std::vector<std::string> stale;
  for (const std::string& name : names) {
    const std::string facts_path = (facts_dir / name).string();
    std::string text;
    try {
      const Json facts = read_json(facts_path);
      if (!facts.is_object()) throw InvalidInput("expected an object");
      const Json extra = field_or(extras, facts.value("node", "").c_str(), Json::object());
      // ensure_ascii: the files are ASCII, as the script this tool replaced wrote them.
      text = document_json(read_node(facts, extra)).dump(2, ' ', true) + "\n";
    } catch (const InvalidInput& e) {
      const std::string what = e.what();
      // read_json names the file already.
      throw InvalidInput(
          what.compare(0, facts_path.size(), facts_path) == 0 ? what : facts_path + ": " + what);
    }
    const fs::path node_path = fs::path(nodes_dir) / name;
    const bool exists = fs::exists(node_path);
    if (exists && read_bounded_file(node_path.string(), kMaxNodeBytes) == text) continue;
    stale.push_back(name);
    if (!check_only) write_file_atomically(node_path.string(), text);
  }
  if (check_only && !stale.empty()) {
    std::string list;
    for (const std::string& name : stale) list += (list.empty() ? "" : ", ") + name;
    std::cerr << "make_corpus: out of date: " << list << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

}  // namespace preflight::corpus

int main(int argc, char** argv) {
  const char* usage = "usage: make_corpus [--check] NODES_DIR (tests/data/nodes)";
  bool check_only = false;
  std::string nodes_dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0) {
      check_only = true;
    } else if (argv[i][0] != '-' && nodes_dir.empty()) {
      nodes_dir = argv[i];
    } else {
      std::cerr << "make_corpus: unexpected argument '" << argv[i] << "'; " << usage << "\n";
      return 2;
    }
  }
  if (nodes_dir.empty()) {
    std::cerr << "make_corpus: " << usage << "\n";
    return 2;
  }
  try {
    return preflight::corpus::run(nodes_dir, check_only);
  } catch (const preflight::InvalidInput& e) {
    std::cerr << "make_corpus: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "make_corpus: " << e.what() << "\n";
    return 2;
  }
}
