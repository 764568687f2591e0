// The node shape table (include/preflight/node_shape.hpp). Each row's layout is taken from the
// source it names; docs/node-shapes.md lists the same rows (tests/unit/test_node_shapes.cpp keeps
// the page and the table in step).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "model/bounded_input.hpp"
#include "model/json_fields.hpp"
#include "preflight/errors.hpp"
#include "preflight/node_shape.hpp"

namespace preflight {

namespace {

constexpr std::size_t kMaxSiteShapes = 64;
constexpr std::size_t kMaxDmiBytes = 256;

const std::vector<std::string> kH100 = {"h100-sxm5-80gb"};
const std::vector<std::string> kH200 = {"h200-sxm-141gb"};
const std::vector<std::string> kA100 = {"a100-sxm4-40gb", "a100-sxm4-80gb"};
const std::vector<std::string> kIbOrRoce = {"ib", "roce"};
const std::pair<std::string, std::string> kNoPcieTree = {
    "uplink_sharing",
    "the VM shows its GPUs and NICs as virtual functions with no PCIe switch above them"};

MachineShape row(std::string id, std::string name, std::string source,
                 std::vector<std::string> skus, int gpus, std::vector<std::string> transports,
                 int ports, double gbps) {
  MachineShape s;
  s.id = std::move(id);
  s.name = std::move(name);
  s.source = std::move(source);
  s.gpu_skus = std::move(skus);
  s.gpus = gpus;
  s.transports = std::move(transports);
  s.compute_ports = ports;
  s.port_gbps = gbps;
  s.nvlink = true;
  return s;
}

std::vector<MachineShape> build_table() {
  std::vector<MachineShape> t;
  // NVIDIA's reference boards: one compute port per GPU behind the GPU's PCIe switch.
  t.push_back(row("hgx-h100", "DGX/HGX H100 (8 x H100 SXM, 8 x 400 Gb/s ConnectX-7)",
                  "https://docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-"
                  "foundation-enterprise-ai/latest/core-components.html: \"Four OSFP ports "
                  "serving eight single-port NVIDIA ConnectX-7 VPI ... up to 400 Gb/s "
                  "InfiniBand/Ethernet\"; one per GPU (DGX H100 User Guide, Network Modules)",
                  kH100, 8, kIbOrRoce, 8, 400));
  t.back().reference_board = true;
  t.push_back(row("hgx-h200", "DGX/HGX H200 (8 x H200 SXM, 8 x 400 Gb/s ConnectX-7)",
                  "https://docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-"
                  "foundation-enterprise-ai/latest/core-components.html: DGX H200 and H100, "
                  "\"eight single-port NVIDIA ConnectX-7 VPI ... up to 400 Gb/s\"",
                  kH200, 8, kIbOrRoce, 8, 400));
  t.back().reference_board = true;
  t.push_back(row("hgx-a100", "DGX/HGX A100 (8 x A100 SXM4, 8 x 200 Gb/s ConnectX-6)",
                  "https://github.com/NVIDIA/nccl/issues/1505 (a DGX A100's topology: 8 mlx5 "
                  "compute NICs at 200 Gb/s, two behind each pair of GPUs' PCIe switch) and "
                  "leptonai/gpud's ibstatus fixture of an A100 node (8 x 200 Gb/s HDR ACTIVE); "
                  "NVIDIA's own page was not found quoted",
                  kA100, 8, kIbOrRoce, 8, 200));
  t.back().reference_board = true;
  t.push_back(row("hgx-b200", "DGX/HGX B200 (8 x B200, 8 x 400 Gb/s ConnectX-7)",
                  "https://docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html: "
                  "\"4 x OSFP ports for 8 x NVIDIA ConnectX-7 Single Port Cards ... Up to "
                  "400Gbps\"",
                  {}, 8, kIbOrRoce, 8, 400));
  // AWS: EFA devices, SRD only; the instance type is the DMI product name.
  t.push_back(row("aws-p5.48xlarge", "AWS p5.48xlarge (8 x H100 SXM, 32 x 100 Gb/s EFA)",
                  "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html "
                  "(a p5 request \"with 32 EFA devices and one ENA device\") and "
                  "https://github.com/aws/aws-ofi-nccl/blob/master/topology/p5.48xl-topo.xml "
                  "(four 100000 Mb/s EFA devices under each GPU's bridge)",
                  kH100, 8, {"efa"}, 32, 100));
  t.back().dmi_product_names = {"p5.48xlarge"};
  t.push_back(row("aws-p5en.48xlarge", "AWS p5en.48xlarge (8 x H200, 16 x 200 Gb/s EFA)",
                  "https://github.com/stas00/ml-engineering/pull/102 (\"EFA v3 3.2 Tbps ... P5en "
                  "AWS instances - 16 200GbE (4x56G) NICs\") and "
                  "https://github.com/skypilot-org/skypilot/pull/5318 (p5en.48xlarge, H200:8, 16 "
                  "EFA); no AWS page found saying 16 x 200",
                  kH200, 8, {"efa"}, 16, 200));
  t.back().dmi_product_names = {"p5en.48xlarge"};
  t.push_back(row("aws-p4d.24xlarge", "AWS p4d.24xlarge (8 x A100 40GB, 4 x 100 Gb/s EFA)",
                  "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/"
                  "accelerated-computing-instances.html (\"p4d.24xlarge | 4x 100 Gigabit\", "
                  "\"400 Gbps of aggregate network bandwidth\") and aws-ofi-nccl's "
                  "topology/p4d-24xl-topo.xml (2 GPUs and 1 NIC behind each PCIe switch)",
                  {"a100-sxm4-40gb"}, 8, {"efa"}, 4, 100));
  t.back().dmi_product_names = {"p4d.24xlarge"};
  // Azure: InfiniBand virtual functions in a VM; no PCIe tree to judge uplinks by.
  t.push_back(row("azure-nd-h100-v5", "Azure ND H100 v5 (8 x H100 SXM, 8 x 400 Gb/s InfiniBand)",
                  "https://github.com/MicrosoftDocs/azure-docs/blob/main/articles/virtual-machines/"
                  "sizes/gpu-accelerated/includes/nd-h100-v5-series-summary.md (\"its own "
                  "dedicated, topology-agnostic 400 Gb/s NVIDIA Quantum-2 CX7 InfiniBand "
                  "connection\") and Azure/azurehpc-health-checks conf/nd96isr_h100_v5.conf "
                  "(check_hw_ib 400 mlx5_ib0..7)",
                  kH100, 8, {"ib"}, 8, 400));
  t.back().not_applicable = {kNoPcieTree};
  t.push_back(row("azure-nd-h200-v5", "Azure ND H200 v5 (8 x H200, 8 x 400 Gb/s InfiniBand)",
                  "https://github.com/Azure/azurehpc-health-checks/blob/main/conf/"
                  "nd96isr_h200_v5.conf (check_hw_ib 400 mlx5_ib0..7, check_hw_ib 100 mlx5_an0:1)",
                  kH200, 8, {"ib"}, 8, 400));
  t.back().not_applicable = {kNoPcieTree};
  // GCP: A3 High moves GPU traffic over TCP (GPUDirect-TCPX); A3 Ultra has RoCE.
  t.push_back(row("gcp-a3-highgpu-8g", "GCP A3 High (8 x H100, GPUDirect-TCPX, no RDMA)",
                  "https://cloud.google.com/kubernetes-engine/docs/how-to/"
                  "gpu-bandwidth-gpudirect-tcpx (secondary NICs \"up to four on A3 High ... each "
                  "supporting up to 200 Gbps\", GPUDirect-TCPX) and "
                  "https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth",
                  kH100, 8, {}, 0, 0));
  t.back().not_applicable = {{"rdma_fabric", "the node shape has no RDMA fabric (GPUDirect-TCPX)"}};
  t.push_back(row("gcp-a3-ultragpu-8g", "GCP A3 Ultra (8 x H200, 8 x 400 Gb/s RoCE)",
                  "https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (\"eight "
                  "NVIDIA ConnectX-7 (CX7) ... a total network bandwidth of 3,200 Gbps ... each "
                  "CX7 NIC is aligned with one GPU\") and https://docs.cloud.google.com/vpc/docs/"
                  "rdma-network-profiles (RoCE v2)",
                  kH200, 8, {"roce"}, 8, 400));
  return t;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trimmed(std::string_view text) {
  std::size_t b = 0;
  std::size_t e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  return std::string(text.substr(b, e - b));
}

}  // namespace

double MachineShape::gpu_reach_gbps() const {
  if (!has_rdma_fabric() || gpus <= 0) return 0;
  return compute_ports * port_gbps / gpus;
}

bool MachineShape::transport_allowed(const std::string& transport) const {
  return std::find(transports.begin(), transports.end(), transport) != transports.end();
}

std::optional<std::string> MachineShape::not_applicable_reason(std::string_view what) const {
  for (const auto& [key, why] : not_applicable) {
    if (key == what) return why;
  }
  return std::nullopt;
}

const std::vector<MachineShape>& node_shape_table() {
  static const std::vector<MachineShape> table = build_table();
  return table;
}

const MachineShape* find_node_shape(std::string_view id, const std::vector<MachineShape>& site) {
  const std::string wanted = lower(id);
  for (const auto* rows : {&site, &node_shape_table()}) {
    for (const MachineShape& s : *rows) {
      if (lower(s.id) == wanted) return &s;
    }
  }
  return nullptr;
}

const MachineShape* node_shape_for_dmi(std::string_view product_name,
                                       const std::vector<MachineShape>& site) {
  const std::string wanted = lower(trimmed(product_name));
  if (wanted.empty()) return nullptr;
  for (const auto* rows : {&site, &node_shape_table()}) {
    for (const MachineShape& s : *rows) {
      for (const std::string& name : s.dmi_product_names) {
        if (lower(name) == wanted) return &s;
      }
    }
  }
  return nullptr;
}

const MachineShape* reference_node_shape(std::string_view sku_id, int gpus) {
  for (const MachineShape& s : node_shape_table()) {
    if (!s.reference_board || s.gpus != gpus) continue;
    if (std::find(s.gpu_skus.begin(), s.gpu_skus.end(), sku_id) != s.gpu_skus.end()) return &s;
  }
  return nullptr;
}

std::string node_shape_ids(const std::vector<MachineShape>& site) {
  std::string out;
  for (const auto* rows : {&site, &node_shape_table()}) {
    for (const MachineShape& s : *rows) out += (out.empty() ? "" : ", ") + s.id;
  }
  return out;
}

std::string read_dmi_product_name(const std::string& path) {
  try {
    return trimmed(read_bounded_file(path, kMaxDmiBytes));
  } catch (const std::exception&) {
    return "";  // no DMI (a container, a VM without it): the shape is picked otherwise
  }
}

std::vector<MachineShape> parse_site_node_shapes(const nlohmann::ordered_json& array,
                                                 const std::string& path) {
  if (!array.is_array()) throw InvalidInput(path + ": expected an array of node shapes");
  if (array.size() > kMaxSiteShapes) {
    throw InvalidInput(path + ": at most " + std::to_string(kMaxSiteShapes) + " node shapes");
  }
  std::vector<MachineShape> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < array.size(); ++i) {
    const Fields f(array[i], path + "[" + std::to_string(i) + "]");
    MachineShape s;
    s.id = f.text("id");
    if (s.id.empty() || s.id.size() > 64 ||
        s.id.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
            std::string::npos) {
      f.fail("id", "expected a name of letters, digits, '.', '_' or '-' (at most 64)");
    }
    if (!ids.insert(lower(s.id)).second) f.fail("id", "\"" + s.id + "\" is listed twice");
    s.name = f.text("name").empty() ? s.id : f.text("name");
    s.source = f.text("source");
    if (s.source.empty()) f.fail("source", "every shape names where its layout comes from");
    s.gpu_skus = f.texts("gpu_skus");
    s.gpus = static_cast<int>(f.integer("gpus", 0, 64).value_or(0));
    s.transports = f.texts("transports");
    for (const std::string& t : s.transports) {
      if (t != "ib" && t != "roce" && t != "efa") {
        f.fail("transports", "expected \"ib\", \"roce\" or \"efa\", got \"" + t + "\"");
      }
    }
    s.compute_ports = static_cast<int>(f.integer("compute_ports", 0, 256).value_or(0));
    s.port_gbps = f.number("port_gbps").value_or(0);
    if (!(std::isfinite(s.port_gbps) && s.port_gbps >= 0 && s.port_gbps <= 3200)) {
      f.fail("port_gbps", "expected a rate of 0 to 3200 Gb/s");
    }
    if (s.transports.empty() != (s.compute_ports == 0)) {
      f.fail("compute_ports", "a shape with transports has compute ports, and one without none");
    }
    s.nvlink = f.flag("has_nvlink").value_or(false);
    s.dmi_product_names = f.texts("dmi_product_names");
    for (const std::string& what : f.texts("not_applicable")) {
      s.not_applicable.emplace_back(what, "the site's node shape " + s.id + " says so");
    }
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::ordered_json node_shape_json(const MachineShape& s) {
  nlohmann::ordered_json j;
  j["id"] = s.id;
  j["name"] = s.name;
  j["source"] = s.source;
  j["gpu_skus"] = s.gpu_skus;
  j["gpus"] = s.gpus;
  j["transports"] = s.transports;
  j["compute_ports"] = s.compute_ports;
  j["port_gbps"] = s.port_gbps;
  j["gpu_reach_gbps"] = s.gpu_reach_gbps();
  j["has_nvlink"] = s.nvlink;
  if (!s.dmi_product_names.empty()) j["dmi_product_names"] = s.dmi_product_names;
  if (s.reference_board) j["reference_board"] = true;
  nlohmann::ordered_json na = nlohmann::ordered_json::object();
  for (const auto& [what, why] : s.not_applicable) na[what] = why;
  if (!na.empty()) j["not_applicable"] = std::move(na);
  return j;
}

}  // namespace preflight
