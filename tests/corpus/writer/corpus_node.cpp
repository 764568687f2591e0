#include "corpus/writer/corpus_node.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>

#include "model/json_fields.hpp"
#include "preflight/errors.hpp"
#include "preflight/node_shape.hpp"
#include "preflight/thresholds.hpp"

namespace preflight::corpus {

namespace {

// NVML's names of the SKUs' GPUs, for a facts file that gives none: the SKU table
// (src/model/sku_table.cpp) holds the marketing names, not what NVML prints.
const std::pair<const char*, const char*> kNvmlNames[] = {
    {"h100-sxm5-80gb", "NVIDIA H100 80GB HBM3"}, {"h100-pcie-80gb", "NVIDIA H100 PCIe"},
    {"h200-sxm-141gb", "NVIDIA H200"},           {"a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB"},
    {"a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB"},
};

int required_int(const Fields& f, const char* key) {
  const auto v = f.integer(key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  if (!v) f.fail(key, "missing");
  return static_cast<int>(*v);
}

std::optional<int> optional_int(const Fields& f, const char* key) {
  const auto v = f.integer(key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

std::string required_text(const Fields& f, const char* key) {
  std::string text = f.text(key);
  if (text.empty()) f.fail(key, "missing");
  return text;
}

// An object given and not empty: what the facts mean by a link, a patch or a figure.
bool given(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && !it->is_null() && !it->empty();
}

std::optional<LinkFacts> link_of(const Fields& f, const char* key, const char* gen,
                                 const char* width) {
  const auto link = f.object(key);
  if (!link || f.find(key)->empty()) return std::nullopt;
  return LinkFacts{required_int(*link, gen), required_int(*link, width)};
}

// NVML's spelling of a bus id from sysfs's: "0000:1b:00.0" -> "00000000:1B:00.0". Other
// lengths are taken as already spelled as NVML does.
std::string nvml_bus_id(std::string id) {
  if (id.size() != 12) return id;
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (const auto at = id.find("0000:"); at != std::string::npos) id.replace(at, 5, "00000000:");
  return id;
}

std::string hex2(int value, bool upper) {
  char text[16];
  std::snprintf(text, sizeof text, upper ? "%02X" : "%02x", static_cast<unsigned>(value));
  return text;
}

GpuFacts gpu_of(const Fields& f, std::size_t position, bool& placeholder) {
  GpuFacts g;
  g.index = required_int(f, "index");
  const std::string bus_id = f.text("pci_bus_id");
  if (bus_id.empty()) {
    // Placeholders 10, 20, 30, ...: any distinct ids serve a node no source gives them for.
    placeholder = true;
    g.bus_id = "00000000:" + hex2(0x10 + 0x10 * static_cast<int>(position), true) + ":00.0";
  } else {
    g.bus_id = nvml_bus_id(bus_id);
  }
  const auto pcie = f.object("pcie");
  if (!pcie) f.fail("pcie", "missing");
  g.pcie_gen_max = required_int(*pcie, "gen_max");
  g.pcie_width_max = required_int(*pcie, "width_max");
  g.numa_node = optional_int(f, "numa_node");
  g.pcie_switch = f.text("switch");
  g.root_port = f.text("root_port");
  g.uplink = link_of(f, "uplink", "gen", "width");
  if (const auto nvlink = f.object("nvlink")) {
    g.nvlink_links = optional_int(*nvlink, "active_links");
    g.nvlink_to_switch = nvlink->flag("to_nvswitch").value_or(false);
    if (const auto peers = nvlink->object("peers")) {
      for (const auto& item : nvlink->find("peers")->items()) {
        const int links = optional_int(*peers, item.key().c_str()).value_or(0);
        if (links > 0) g.nvlink_peers.emplace_back(item.key(), links);
      }
      std::sort(g.nvlink_peers.begin(), g.nvlink_peers.end());
    }
  }
  return g;
}

NicFacts nic_of(const Fields& f) {
  NicFacts nic;
  nic.name = f.text("name");
  nic.pci_bus_id = f.text("pci_bus_id");
  nic.numa_node = optional_int(f, "numa_node");
  nic.pcie = link_of(f, "pcie", "gen", "width");
  nic.pcie_switch = f.text("switch");
  nic.affinity = f.text("affinity");
  nic.transport = f.text("transport");
  if (!nic.transport.empty() && nic.transport != "ib" && nic.transport != "roce" &&
      nic.transport != "efa") {
    f.fail("transport", "expected \"ib\", \"roce\" or \"efa\", got \"" + nic.transport + "\"");
  }
  nic.bond_members = f.texts("bond_members");
  for (const Fields& p : f.objects("ports")) {
    // A port whose state no source gives is left out, not guessed.
    if (p.find("state") == nullptr) continue;
    PortFacts port;
    port.port = required_int(p, "port");
    port.state = p.text("state");
    port.phys_state = required_text(p, "phys_state");
    port.rate_gbps = p.number("rate_gbps").value_or(0.0);
    port.link_layer = p.text("link_layer");
    nic.ports.push_back(std::move(port));
  }
  return nic;
}

}  // namespace

std::string NodeFacts::entity(std::size_t position) const {
  return "gpu" + std::to_string(gpus.at(position).index);
}

NodeFacts read_node(const Json& facts, const Json& extra) {
  const Fields f(facts, "");
  const Fields x(extra, "_extra.json");
  NodeFacts n;
  n.facts = facts;
  n.extra = extra;
  n.assumed = x.texts("assumed");
  n.node = required_text(f, "node");
  // "sku": null: GPUs of a model the tool does not know (an H20); what NVML reports of them,
  // their name and PCI device id, must then be given, and `judge` works with generic limits.
  if (f.find("sku") == nullptr && facts.contains("sku")) {
    n.pci_device_id = required_text(f, "pci_device_id");
    n.gpu_name = required_text(f, "gpu_name");
  } else {
    n.sku = required_text(f, "sku");
  }
  const SkuSpec* sku = n.sku.empty() ? nullptr : find_sku(n.sku);
  const char* nvml_name = nullptr;
  for (const auto& [id, name] : kNvmlNames) {
    if (n.sku == id) nvml_name = name;
  }
  if (!n.sku.empty() && (sku == nullptr || nvml_name == nullptr)) {
    f.fail("sku", "unknown SKU \"" + n.sku + "\" (null: GPUs the tool does not know)");
  }
  n.pci_device_id = f.text("pci_device_id");
  if (n.pci_device_id.empty()) n.pci_device_id = "0x" + hex2(sku->pci_device_ids.front(), false);
  n.gpu_name = f.text("gpu_name");
  if (n.gpu_name.empty()) {
    n.gpu_name = nvml_name;
    n.assumed.push_back("GPU name: " + n.gpu_name +
                        " (NVML's name for the SKU; the source gives none)");
  }

  if (const auto shape = f.object("node_shape")) {
    n.node_shape = required_text(*shape, "id");
    n.node_shape_by = required_text(*shape, "by");
    const MachineShape* known = find_node_shape(n.node_shape);
    if (known == nullptr) {
      shape->fail("id",
                  "unknown node shape \"" + n.node_shape + "\" (known: " + node_shape_ids() + ")");
    }
    n.node_shape = known->id;
  }
  const std::string view = f.text("view");
  if (view == "container") {
    n.view = NodeView::container;
  } else if (view == "vm") {
    n.view = NodeView::vm;
  } else if (!view.empty() && view != "host") {
    f.fail("view", "expected \"host\", \"container\" or \"vm\", got \"" + view + "\"");
  }

  // _extra.json's gpus_patch corrects fields of GPUs by position before anything is read.
  Json gpus = f.find("gpus") != nullptr ? facts.at("gpus") : Json::array();
  if (!gpus.is_array()) f.fail("gpus", "expected an array of GPUs");
  if (given(extra, "gpus_patch")) {
    if (!extra.at("gpus_patch").is_object()) x.fail("gpus_patch", "expected an object");
    for (const auto& item : extra.at("gpus_patch").items()) {
      const std::string field = "gpus_patch." + item.key();
      const std::size_t position = std::strtoul(item.key().c_str(), nullptr, 10);
      if (position >= gpus.size() || !gpus[position].is_object() || !item.value().is_object()) {
        throw InvalidInput("_extra.json: " + field + ": expected an object patching a GPU");
      }
      for (const auto& field_patch : item.value().items()) {
        gpus[position][field_patch.key()] = field_patch.value();
      }
    }
  }
  bool placeholder = false;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    n.gpus.push_back(gpu_of(Fields(gpus[i], "gpus[" + std::to_string(i) + "]"), i, placeholder));
  }
  if (placeholder) {
    n.assumed.emplace_back("GPU PCI bus ids: placeholders (the sources give none or not all)");
  }
  // The node's NICs from _extra.json replace the facts file's where given.
  const Fields& nic_source = given(extra, "nics") ? x : f;
  for (const Fields& nic : nic_source.objects("nics")) n.nics.push_back(nic_of(nic));
  return n;
}

Json published_figure(const NodeFacts& node, const char* key) {
  const auto figures = node.facts.find("figures");
  if (figures == node.facts.end() || !figures->is_object()) return nullptr;
  const auto figure = figures->find(key);
  if (figure == figures->end() || !figure->is_object()) return nullptr;
  const auto value = figure->find("value");
  if (value == figure->end() || value->is_null()) return nullptr;
  return *figure;
}

Json added_figure(const NodeFacts& node, const char* key) {
  return given(node.extra, key) ? node.extra.at(key) : Json(nullptr);
}

double figure_value(const Json& figure, const char* key) {
  const auto value = figure.find("value");
  if (value == figure.end() || !value->is_number()) {
    throw InvalidInput(std::string(key) + ".value: expected a number");
  }
  return value->get<double>();
}

}  // namespace preflight::corpus
