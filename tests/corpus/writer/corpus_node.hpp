#pragma once
// One kind of machine of the corpus of real nodes (docs/judge.md#the-corpus-of-real-nodes) as
// its facts file (tests/data/nodes/facts/<node>.json) and its entry of facts/_extra.json describe
// it, read into typed fields: the GPUs with their PCIe and NVLink topology, the RDMA devices with
// their ports, and the values that are placeholders rather than published figures. What the
// document copies as it is (sources, figures, notes) stays JSON.
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace preflight::corpus {

using Json = nlohmann::ordered_json;

struct LinkFacts {
  int gen = 0;
  int width = 0;
};

struct GpuFacts {
  int index = 0;       // NVML index; the entity is gpu<index>
  std::string bus_id;  // as NVML spells it, "00000000:1B:00.0"; a placeholder where none is given
  int pcie_gen_max = 0;
  int pcie_width_max = 0;
  std::optional<int> numa_node;
  std::string pcie_switch;          // the switch's name in the facts ("sw0"); "" when none is named
  std::string root_port;            // "" when the source gives none
  std::optional<LinkFacts> uplink;  // the switch's link up to the root port, when published
  std::optional<int> nvlink_links;  // nullopt: the source gives no NVLink
  bool nvlink_to_switch = false;
  // The GPUs at the other end of its NVLinks: (their position in the facts, links), in the
  // order of the position as text, as the script this tool replaced wrote them.
  std::vector<std::pair<std::string, int>> nvlink_peers;
};

struct PortFacts {
  int port = 1;
  std::string state;  // "ACTIVE", "DOWN"
  std::string phys_state;
  double rate_gbps = 0.0;
  std::string link_layer;
};

struct NicFacts {
  std::string name;  // "mlx5_0"
  std::string pci_bus_id;
  std::optional<int> numa_node;
  std::optional<LinkFacts> pcie;
  std::string pcie_switch;  // shared with the GPUs of the same name: the nearest GPU
  std::string affinity;     // "numa", ... where no switch is shared; "" when not given
  std::string transport;    // "ib", "roce", "efa"; "" when not given (from the link layer)
  std::vector<std::string> bond_members;  // a bonded RoCE device's netdevs; empty: not a bond
  std::vector<PortFacts> ports;           // those whose state is published
};

// What the run could see of the PCIe tree: all of it (bare metal), or, from a container without
// /sys/bus/pci or in a VM whose NICs are virtual functions, not where a NIC sits among the GPUs.
enum class NodeView { host, container, vm };

struct NodeFacts {
  Json facts;  // the whole facts file
  Json extra;  // the node's entry of _extra.json; an empty object when it has none
  std::string node;
  std::string sku;  // "" for GPUs of a model the tool does not know (facts "sku": null)
  std::string gpu_name;
  std::string pci_device_id;  // "0x2330"
  std::vector<GpuFacts> gpus;
  std::vector<NicFacts> nics;
  // The node shape a real run records (facts "node_shape": {"id", "by"}); "" when none is
  // recorded, so `judge` assumes the reference board of the GPUs.
  std::string node_shape;
  std::string node_shape_by;
  NodeView view = NodeView::host;
  // Values that are not published figures, noticed while reading (the node's own list from
  // _extra.json first); the document adds those every node shares.
  std::vector<std::string> assumed;

  std::string entity(std::size_t position) const;  // "gpu3"
};

// Throws InvalidInput naming the field ("gpus[2].pcie.gen_max: missing") for facts it cannot
// use: a field missing or of the wrong type, a SKU the tool does not know (a null SKU, GPUs the
// tool does not know, needs the GPUs' name and PCI device id), a node shape it does not know.
NodeFacts read_node(const Json& facts, const Json& extra);

// A figure of the facts file ("figures": {KEY: {"value": ...}}) or of _extra.json (KEY:
// {"value": ...}); null when not given or its value is null.
Json published_figure(const NodeFacts& node, const char* key);
Json added_figure(const NodeFacts& node, const char* key);
// Its value; throws InvalidInput naming the key when it is not a number.
double figure_value(const Json& figure, const char* key);

}  // namespace preflight::corpus
