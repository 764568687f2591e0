#pragma once
// Node shapes: what a known type of machine has, as data with a source per row, so the rdma check
// judges a node by what its GPUs should get rather than by a per-port floor taken from the GPU
// model. An AWS p5.48xlarge reaches 400 Gb/s per GPU over four 100 Gb/s EFA devices; a DGX H100
// over one 400 Gb/s port: the same per GPU, not the same per port. docs/node-shapes.md.
//
// A shape comes from --node-shape NAME, else the DMI product name (AWS writes the instance type
// there: no network call), else the GPU model and count pick the reference board (8 x H200 is
// judged as an HGX H200, recorded as assumed). A site adds its own rows in the thresholds file
// ("node_shapes").
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace preflight {

struct MachineShape {
  std::string id;      // "aws-p5.48xlarge": what --node-shape takes
  std::string name;    // "AWS p5.48xlarge (8 x H100 SXM, 32 x 100 Gb/s EFA)"
  std::string source;  // where the row's layout comes from (URL and what it says)
  // The GPUs: SKU ids of the SKU table (any of them), and how many. Empty: any model.
  std::vector<std::string> gpu_skus;
  int gpus = 0;
  // The compute fabric: the transports its NICs may have ("ib", "roce", "efa"; empty: the node
  // has no RDMA fabric, its GPUs talk over TCP), how many compute ports, and each port's rate.
  std::vector<std::string> transports;
  int compute_ports = 0;
  double port_gbps = 0;
  bool nvlink = false;
  // DMI product names that identify the shape (/sys/class/dmi/id/product_name).
  std::vector<std::string> dmi_product_names;
  // Picked by GPU model and count when nothing else names the node.
  bool reference_board = false;
  // What cannot be judged on this shape, with the reason ("uplink_sharing": Azure's VMs show
  // virtual functions and no PCIe switches).
  std::vector<std::pair<std::string, std::string>> not_applicable;

  bool has_rdma_fabric() const { return !transports.empty() && compute_ports > 0; }
  // The compute bandwidth each GPU must reach: all compute ports' rates over the GPUs (p4d's
  // four 100 Gb/s EFA devices give each of its eight GPUs 50 Gb/s). 0 where there is no fabric.
  double gpu_reach_gbps() const;
  bool transport_allowed(const std::string& transport) const;
  // The reason `what` does not apply, nullopt when it does.
  std::optional<std::string> not_applicable_reason(std::string_view what) const;
};

// The built-in rows, in the order `preflight thresholds --node-shape` lists them.
const std::vector<MachineShape>& node_shape_table();
// By id, case-insensitively, in `site` first, then the built-in rows; nullptr when unknown.
const MachineShape* find_node_shape(std::string_view id,
                                    const std::vector<MachineShape>& site = {});
// The shape whose DMI product names include `product_name` (trimmed); nullptr when none.
const MachineShape* node_shape_for_dmi(std::string_view product_name,
                                       const std::vector<MachineShape>& site = {});
// The reference board for `gpus` GPUs of SKU `sku_id`; nullptr when none is.
const MachineShape* reference_node_shape(std::string_view sku_id, int gpus);
// "aws-p5.48xlarge, aws-p5en.48xlarge, ...": for messages naming what --node-shape accepts.
std::string node_shape_ids(const std::vector<MachineShape>& site = {});

// The product name from DMI (`path`, normally /sys/class/dmi/id/product_name), trimmed; "" when
// it cannot be read (no DMI in a container, not a regular file, over 256 bytes).
std::string read_dmi_product_name(const std::string& path = "/sys/class/dmi/id/product_name");

// A site's rows, from the thresholds file's "node_shapes" array; throws InvalidInput naming the
// field ("node_shapes[1].port_gbps: ...") for a bad one. At most 64 rows.
std::vector<MachineShape> parse_site_node_shapes(const nlohmann::ordered_json& array,
                                                 const std::string& path);
nlohmann::ordered_json node_shape_json(const MachineShape& shape);

}  // namespace preflight
