// Node shapes (include/preflight/node_shape.hpp): the table's rows are sourced, unique and listed
// in docs/node-shapes.md; a node's shape is chosen by --node-shape, DMI, then the reference board;
// a site's rows come from the thresholds file and bad ones are refused naming the field.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "preflight/errors.hpp"
#include "preflight/node_shape.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;

namespace {

std::string shapes_page() {
  std::ifstream in(std::string(PREFLIGHT_SOURCE_DIR) + "/docs/node-shapes.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Thresholds shape_thresholds(const char* sku) {
  return test::builtin_thresholds(sku ? find_sku(sku) : nullptr, "test");
}

}  // namespace

TEST_CASE("node shapes: every row is sourced, unique, consistent and on its docs page") {
  const std::string page = shapes_page();
  REQUIRE_FALSE(page.empty());
  std::set<std::string> ids;
  for (const MachineShape& s : node_shape_table()) {
    INFO(s.id);
    CHECK(ids.insert(s.id).second);
    CHECK(s.source.find("http") != std::string::npos);
    CHECK(s.gpus > 0);
    for (const std::string& sku : s.gpu_skus) CHECK(find_sku(sku) != nullptr);
    CHECK(s.has_rdma_fabric() == (s.port_gbps > 0));
    CHECK(page.find("| `" + s.id + "` |") != std::string::npos);
  }
  // The issue's cases: a p5 gives each GPU what a DGX H100 does, over four EFA ports.
  const MachineShape* p5 = find_node_shape("AWS-P5.48XLARGE");
  REQUIRE(p5 != nullptr);
  CHECK(p5->gpu_reach_gbps() == 400);
  CHECK(find_node_shape("hgx-h100")->gpu_reach_gbps() == 400);
  CHECK(find_node_shape("aws-p4d.24xlarge")->gpu_reach_gbps() == 50);
  CHECK_FALSE(find_node_shape("gcp-a3-highgpu-8g")->has_rdma_fabric());
  CHECK(find_node_shape("azure-nd-h100-v5")->not_applicable_reason("uplink_sharing"));
}

TEST_CASE("node shapes: --node-shape, then DMI, then the reference board, else none") {
  Thresholds t = shape_thresholds("h200-sxm-141gb");
  choose_node_shape(t, "aws-p5en.48xlarge", "p5.48xlarge", 8);
  CHECK(t.node_shape()->id == "aws-p5en.48xlarge");
  CHECK(t.node_shape_by() == "--node-shape");
  choose_node_shape(t, "", " p5.48xlarge\n", 8);
  CHECK(t.node_shape()->id == "aws-p5.48xlarge");
  CHECK(t.node_shape_by() == "DMI product name  p5.48xlarge\n");
  choose_node_shape(t, "", "Virtual Machine", 8);
  CHECK(t.node_shape()->id == "hgx-h200");
  CHECK(t.node_shape_by().rfind("assumed: 8 x h200-sxm-141gb", 0) == 0);
  choose_node_shape(t, "", "", 4);  // no 4-GPU reference board
  CHECK(t.node_shape() == nullptr);
  Thresholds pcie = shape_thresholds("h100-pcie-80gb");
  choose_node_shape(pcie, "", "", 8);
  CHECK(pcie.node_shape() == nullptr);
  try {
    choose_node_shape(t, "p6.48xlarge", "", 8);
    FAIL("an unknown shape was taken");
  } catch (const InvalidInput& e) {
    CHECK(std::string(e.what()).find("--node-shape: unknown node shape \"p6.48xlarge\"") == 0);
    CHECK(std::string(e.what()).find("aws-p5.48xlarge") != std::string::npos);
  }
}

TEST_CASE("node shapes: a site's rows come from the thresholds file, bad ones are refused") {
  Thresholds t = shape_thresholds("h100-sxm5-80gb");
  t.apply_overrides(R"({"node_shapes": [{"id": "site-roce", "source": "build sheet",
      "gpu_skus": ["h100-sxm5-80gb"], "gpus": 8, "transports": ["roce"], "compute_ports": 4,
      "port_gbps": 200, "dmi_product_names": ["ACME G593"]}]})",
                    "site.json");
  REQUIRE(t.site_node_shapes().size() == 1);
  choose_node_shape(t, "", "ACME G593", 8);
  REQUIRE(t.node_shape() != nullptr);
  CHECK(t.node_shape()->id == "site-roce");
  CHECK(t.node_shape()->gpu_reach_gbps() == 100);
  // What `preflight thresholds` prints shows the shape and is taken back unchanged.
  const std::string text = t.to_json_text();
  CHECK(text.find("\"node_shape\"") != std::string::npos);
  Thresholds again = shape_thresholds("h100-sxm5-80gb");
  again.apply_overrides(text, "printed");

  const auto refused = [&](const std::string& json, const std::string& says) {
    Thresholds fresh = shape_thresholds(nullptr);
    try {
      fresh.apply_overrides(json, "site.json");
      FAIL("accepted: " << json);
    } catch (const InvalidInput& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(says) != std::string::npos);
    }
    CHECK(fresh.site_node_shapes().empty());  // nothing half-applied
  };
  refused(R"({"node_shapes": {"id": "x"}})", "expected an array");
  refused(R"({"node_shapes": [{"id": "x"}]})", "node_shapes[0].source");
  refused(R"({"node_shapes": [{"id": "a b", "source": "s"}]})", "node_shapes[0].id");
  refused(R"({"node_shapes": [{"id": "x", "source": "s", "transports": ["tcp"],
      "compute_ports": 1, "port_gbps": 1}]})",
          "node_shapes[0].transports");
  refused(R"({"node_shapes": [{"id": "x", "source": "s", "transports": ["ib"]}]})",
          "node_shapes[0].compute_ports");
  refused(R"({"node_shapes": [{"id": "x", "source": "s"}, {"id": "X", "source": "s"}]})",
          "listed twice");
}

TEST_CASE("node shapes: DMI is read bounded, and an unreadable one is no shape") {
  std::string base = (std::filesystem::temp_directory_path() / "preflight-dmi-XXXXXX").string();
  REQUIRE(mkdtemp(base.data()) != nullptr);
  const std::string dir = base;
  CHECK(read_dmi_product_name(dir + "/absent").empty());
  CHECK(read_dmi_product_name(dir).empty());  // a directory
  std::ofstream(dir + "/product_name") << "p5.48xlarge\n";
  CHECK(read_dmi_product_name(dir + "/product_name") == "p5.48xlarge");
  std::ofstream(dir + "/big") << std::string(4096, 'x');
  CHECK(read_dmi_product_name(dir + "/big").empty());
  std::filesystem::remove_all(dir);
}
