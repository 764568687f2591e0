// Thresholds: the spec and SKU tables, SKU detection, effective values, and the --thresholds
// file parser, which must turn every malformed or hostile document into one InvalidInput line
// naming the key path while leaving the values untouched.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "preflight/check.hpp"
#include "preflight/errors.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_thresholds.hpp"

namespace fs = std::filesystem;
using preflight::InvalidInput;
using preflight::Thresholds;

namespace {

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "preflight-thresholds-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) FAIL("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  fs::path file(const std::string& name, const std::string& text) const {
    const fs::path path = path_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Thresholds h100_by_flag() {
  return preflight::test::builtin_thresholds(preflight::find_sku("h100-sxm5-80gb"), "--sku");
}

// The message of the InvalidInput that applying `text` throws ("" when none is thrown).
std::string override_error(Thresholds& thresholds, const std::string& text) {
  try {
    thresholds.apply_overrides(text, "hostile.json");
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("thresholds: spec and SKU tables are consistent") {
  const auto specs = preflight::test::builtin_threshold_specs();
  const Thresholds generic = preflight::test::builtin_thresholds(nullptr, "test");
  std::set<std::string_view> keys;
  for (const auto& spec : *specs) {
    INFO(spec.key);
    CHECK(keys.insert(spec.key).second);
    CHECK(spec.key.find('.') != std::string_view::npos);
    CHECK(spec.min_value <= spec.generic);
    CHECK(spec.generic <= spec.max_value);
    if (spec.integer) CHECK(spec.generic == std::floor(spec.generic));
    CHECK(generic.find_spec(spec.key) == &spec);
    // Every known SKU's value, from its datasheet or the check's own figure, is in range.
    for (const auto& sku : preflight::sku_table()) {
      INFO(sku.id);
      const double value = spec.value_for(&sku);
      CHECK(value >= spec.min_value);
      CHECK(value <= spec.max_value);
      if (spec.integer) CHECK(value == std::floor(value));
    }
  }
  CHECK(generic.find_spec("inventory.nope") == nullptr);

  std::set<std::string_view> ids;
  std::set<std::uint16_t> pci_ids;
  for (const auto& sku : preflight::sku_table()) {
    INFO(sku.id);
    CHECK(ids.insert(sku.id).second);
    CHECK(sku.id != "generic");
    for (auto pci_id : sku.pci_device_ids) CHECK(pci_ids.insert(pci_id).second);
    // Every SKU known has the figures a datasheet always gives.
    CHECK(sku.datasheet.pcie_gen >= 4);
    CHECK(sku.datasheet.pcie_width == 16);
    CHECK(sku.datasheet.bf16_tflops > 0);
    CHECK(sku.datasheet.hbm_gbps > 0);
  }
}

TEST_CASE("thresholds: a check declares keys of its own section only, each once") {
  using namespace preflight;
  struct Declaring final : public Check {
    explicit Declaring(std::string name, ThresholdSpecs specs) {
      info_.name = std::move(name);
      info_.thresholds = std::move(specs);
    }
    const CheckInfo& info() const override { return info_; }
    CheckResult run(CheckContext&) const override { return {}; }
    CheckInfo info_;
  };
  const auto refused = [](std::string name, ThresholdSpecs specs) {
    CheckRegistry registry;
    register_builtin_checks(registry);
    const auto before = registry.threshold_specs()->size();
    bool threw = false;
    try {
      registry.add(std::make_unique<Declaring>(std::move(name), std::move(specs)));
    } catch (const std::logic_error&) {
      threw = true;
    }
    if (threw) CHECK(registry.threshold_specs()->size() == before);  // the check is not kept
    return threw;
  };
  // A name no check has (the layout test adds a check "probe" from the template).
  const ThresholdSpec own{"keyowner.limit", "count", "a limit", 0, 10, true, 1};
  CHECK_FALSE(refused("keyowner", {own}));
  ThresholdSpec outside = own;
  outside.key = "gemm.limit";
  CHECK(refused("keyowner", {outside}));
  CHECK(refused("keyowner", {own, own}));
  ThresholdSpec foreign_fail = own;
  foreign_fail.key = "keyowner.warn";
  foreign_fail.fail_key = "gemm.straggler_fail_pct";
  CHECK(refused("keyowner", {foreign_fail}));
  ThresholdSpec unknown_sku = own;
  unknown_sku.sku_values = {{"no-such-gpu", 2}};
  CHECK(refused("keyowner", {unknown_sku}));
}

TEST_CASE("thresholds: generic values when the SKU is unknown") {
  const Thresholds t = preflight::test::builtin_thresholds(nullptr, "no GPU");
  CHECK(t.sku_id() == "generic");
  CHECK(t.sku_name() == "generic (unknown GPU model)");
  CHECK(t.detected_by() == "no GPU");
  CHECK(t.overridden().empty());
  CHECK(t.overrides_file().empty());
  CHECK(t.values().size() == preflight::test::builtin_threshold_specs()->size());
  CHECK(t.get("inventory.temperature_warn_c") == 75);
  CHECK(t.get("inventory.temperature_fail_c") == 85);
  CHECK(t.get("inventory.ecc_correctable_warn") == 1000);
  CHECK(t.get("inventory.ecc_uncorrectable_max") == 0);
  CHECK(t.get("inventory.foreign_memory_fail_mib") == 1024);
  CHECK(t.get("inventory.expected_pcie_gen") == 0);
  CHECK(t.get("inventory.expected_pcie_width") == 0);
  CHECK(t.get("inventory.expected_nvlink_links") == 0);
  CHECK(t.get("inventory.probe_timeout_s") == 10);
  CHECK_THROWS_AS(t.get("inventory.no_such_key"), std::out_of_range);
  CHECK_THROWS_AS(t.get(""), std::out_of_range);
  // A default-constructed Thresholds has no keys yet: reading one is a bug, not a guess.
  CHECK_THROWS_AS(Thresholds{}.get("inventory.temperature_fail_c"), std::out_of_range);
}

TEST_CASE("thresholds: per-SKU effective values") {
  struct Expected {
    const char* id;
    double gen, width, links;
  };
  const std::vector<Expected> expected = {
      {"a100-sxm4-40gb", 4, 16, 12}, {"a100-sxm4-80gb", 4, 16, 12}, {"a100-pcie-40gb", 4, 16, 0},
      {"a100-pcie-80gb", 4, 16, 0},  {"h100-sxm5-80gb", 5, 16, 18}, {"h100-pcie-80gb", 5, 16, 0},
      {"h200-sxm-141gb", 5, 16, 18}, {"h200-nvl-141gb", 5, 16, 0},
  };
  for (const auto& e : expected) {
    INFO(e.id);
    const auto* sku = preflight::find_sku(e.id);
    REQUIRE(sku != nullptr);
    const Thresholds t = preflight::test::builtin_thresholds(sku, "pci device id 0x2330");
    CHECK(t.sku_id() == e.id);
    CHECK(t.sku_name() == sku->name);
    CHECK(t.detected_by() == "pci device id 0x2330");
    CHECK(t.get("inventory.expected_pcie_gen") == e.gen);
    CHECK(t.get("inventory.expected_pcie_width") == e.width);
    CHECK(t.get("inventory.expected_nvlink_links") == e.links);
    // Policy numbers are the same for every SKU.
    CHECK(t.get("inventory.temperature_warn_c") == 75);
    CHECK(t.get("inventory.probe_timeout_s") == 10);
  }
}

TEST_CASE("thresholds: detect_sku by PCI device id, by name, or not at all") {
  auto id_of = [](const preflight::SkuSpec* sku) {
    return sku == nullptr ? std::string("null") : std::string(sku->id);
  };
  CHECK(id_of(preflight::detect_sku(0x20B0, "")) == "a100-sxm4-40gb");
  CHECK(id_of(preflight::detect_sku(0x20B2, "")) == "a100-sxm4-80gb");
  CHECK(id_of(preflight::detect_sku(0x2330, "")) == "h100-sxm5-80gb");
  CHECK(id_of(preflight::detect_sku(0x2331, "")) == "h100-pcie-80gb");
  CHECK(id_of(preflight::detect_sku(0x2335, "")) == "h200-sxm-141gb");
  CHECK(id_of(preflight::detect_sku(0x233B, "")) == "h200-nvl-141gb");
  // The PCI id wins over a name that says otherwise.
  CHECK(id_of(preflight::detect_sku(0x2331, "NVIDIA H100 80GB HBM3")) == "h100-pcie-80gb");

  // By name (case-insensitive substring) when the id is unknown.
  CHECK(id_of(preflight::detect_sku(0, "NVIDIA H100 80GB HBM3")) == "h100-sxm5-80gb");
  CHECK(id_of(preflight::detect_sku(0xFFFF, "nvidia a100-sxm4-40gb")) == "a100-sxm4-40gb");
  CHECK(id_of(preflight::detect_sku(0, "NVIDIA H100 PCIe")) == "h100-pcie-80gb");
  CHECK(id_of(preflight::detect_sku(0, "NVIDIA H200")) == "h200-sxm-141gb");
  // "H200" must not steal the NVL card, which expects no NVLink links.
  CHECK(id_of(preflight::detect_sku(0, "NVIDIA H200 NVL")) == "h200-nvl-141gb");

  CHECK(preflight::detect_sku(0x1EB8, "Tesla T4") == nullptr);
  CHECK(preflight::detect_sku(0, "") == nullptr);
}

TEST_CASE("thresholds: find_sku by id or by name") {
  const auto* by_id = preflight::find_sku("h100-sxm5-80gb");
  REQUIRE(by_id != nullptr);
  CHECK(by_id->name == "NVIDIA H100 SXM5 80GB");
  CHECK(preflight::find_sku("NVIDIA H100 SXM5 80GB") == by_id);
  CHECK(preflight::find_sku("nvidia h100 sxm5 80gb") == by_id);
  CHECK(preflight::find_sku("a100-sxm4-80gb")->pci_device_ids.front() == 0x20B2);
  CHECK(preflight::find_sku("H100-SXM5-80GB") == nullptr);  // ids match exactly
  CHECK(preflight::find_sku("h100") == nullptr);
  CHECK(preflight::find_sku("") == nullptr);
}

TEST_CASE("thresholds: to_json_text round-trips through apply_overrides") {
  std::vector<const preflight::SkuSpec*> skus = {nullptr};
  for (const auto& sku : preflight::sku_table()) skus.push_back(&sku);
  for (const auto* sku : skus) {
    Thresholds original = preflight::test::builtin_thresholds(sku, "--sku");
    original.apply_overrides(R"({"inventory": {"probe_timeout_s": 2.5}})", "t.json");
    const std::string text = original.to_json_text();
    INFO(text);
    CHECK(text.rfind("{\n  \"schema\": \"preflight.thresholds/1\",\n  \"sku\": \"", 0) == 0);
    CHECK(text.back() == '\n');
    CHECK(text.find("\"temperature_warn_c\": 75,") != std::string::npos);  // not 75.0
    CHECK(text.find("\"probe_timeout_s\": 2.5") != std::string::npos);

    Thresholds copy = preflight::test::builtin_thresholds(nullptr, "no GPU");
    copy.apply_overrides(text, "roundtrip.json");
    CHECK(copy.values() == original.values());
    // Same text from "inventory" on; "sku" differs (the copy was made generic).
    const std::string again = copy.to_json_text();
    CHECK(again.substr(again.find("\"inventory\"")) == text.substr(text.find("\"inventory\"")));
  }
}

TEST_CASE("thresholds: a file overrides a subset of keys") {
  Thresholds t = h100_by_flag();
  const auto before = t.values();
  t.apply_overrides(R"({"schema": "preflight.thresholds/1", "sku": "anything",
                        "inventory": {"temperature_warn_c": 70, "probe_timeout_s": 30.5,
                                      "expected_nvlink_links": 16}})",
                    "site.json");
  CHECK(t.get("inventory.temperature_warn_c") == 70);
  CHECK(t.get("inventory.probe_timeout_s") == 30.5);
  CHECK(t.get("inventory.expected_nvlink_links") == 16);
  CHECK(t.get("inventory.temperature_fail_c") == before.at("inventory.temperature_fail_c"));
  CHECK(t.get("inventory.expected_pcie_gen") == 5);
  CHECK(t.sku_id() == "h100-sxm5-80gb");  // "sku" in the file is informational
  CHECK(t.overrides_file() == "site.json");
  CHECK(t.overridden() == std::vector<std::string>{"inventory.expected_nvlink_links",
                                                   "inventory.probe_timeout_s",
                                                   "inventory.temperature_warn_c"});

  // A second document adds to the overridden list, sorted and without repeats.
  t.apply_overrides(R"({"inventory": {"temperature_warn_c": 72, "ecc_correctable_warn": 10}})",
                    "second.json");
  CHECK(t.get("inventory.temperature_warn_c") == 72);
  CHECK(t.overridden() == std::vector<std::string>{
                              "inventory.ecc_correctable_warn", "inventory.expected_nvlink_links",
                              "inventory.probe_timeout_s", "inventory.temperature_warn_c"});

  // warn == fail is allowed; raising both together is checked after the whole file.
  t.apply_overrides(R"({"inventory": {"temperature_warn_c": 100, "temperature_fail_c": 100}})",
                    "third.json");
  CHECK(t.get("inventory.temperature_fail_c") == 100);
}

TEST_CASE("thresholds: an empty object changes nothing") {
  Thresholds t = h100_by_flag();
  const auto before = t.values();
  t.apply_overrides("  {}\n", "empty.json");
  t.apply_overrides(R"({"inventory": {}})", "empty.json");
  CHECK(t.values() == before);
  CHECK(t.overridden().empty());
}

TEST_CASE("thresholds: hostile documents are InvalidInput naming the key path") {
  struct Case {
    std::string document;
    std::string expected;  // expected in the message, after "hostile.json: "
  };
  const std::vector<Case> cases = {
      {R"({"inventory": {"temprature_warn_c": 80}})", "inventory.temprature_warn_c: unknown key"},
      {R"({"memory": {"bandwidth_gbps": 1}})", "memory: unknown key"},
      {R"({"inventory.temperature_warn_c": 80})", "inventory.temperature_warn_c: unknown key"},
      {R"({"inventory": {"temperature_warn_c": "80"}})",
       "inventory.temperature_warn_c: expected a number, got string"},
      {R"({"inventory": {"temperature_warn_c": true}})",
       "inventory.temperature_warn_c: expected a number, got boolean"},
      {R"({"inventory": {"temperature_warn_c": null}})",
       "inventory.temperature_warn_c: expected a number, got null"},
      {R"({"inventory": {"temperature_warn_c": [80]}})",
       "inventory.temperature_warn_c: expected a number, got array"},
      {R"({"inventory": {"temperature_warn_c": {"value": 80}}})",
       "inventory.temperature_warn_c: expected a number, got object"},
      {R"({"inventory": [1, 2]})", "inventory: expected an object"},
      {R"({"inventory": 5})", "inventory: expected an object"},
      {R"({"inventory": {"temperature_warn_c": 900}})",
       "inventory.temperature_warn_c: 900 is outside 20..120"},
      {R"({"inventory": {"temperature_fail_c": 1e300}})",
       "inventory.temperature_fail_c: 1e+300 is outside 20..120"},
      {R"({"inventory": {"ecc_correctable_warn": -1}})",
       "inventory.ecc_correctable_warn: -1 is outside 0..1000000000"},
      {R"({"inventory": {"probe_timeout_s": 0}})",
       "inventory.probe_timeout_s: 0 is outside 1..600"},
      {R"({"inventory": {"ecc_correctable_warn": 1.5}})",
       "inventory.ecc_correctable_warn: 1.5 is not a whole number"},
      {R"({"inventory": {"temperature_warn_c": 90}})",
       "inventory.temperature_warn_c: 90 is above inventory.temperature_fail_c (85)"},
      // Valid keys before the bad one must not be applied either.
      {R"({"inventory": {"ecc_correctable_warn": 5, "temperature_fail_c": 70}})",
       "inventory.temperature_warn_c: 75 is above inventory.temperature_fail_c (70)"},
      {R"({"gemm": {"warn_fraction_of_peak": 0.4}})",
       "gemm.warn_fraction_of_peak: 0.4 is below gemm.fail_fraction_of_peak (0.5)"},
      {R"({"gemm": {"straggler_warn_pct": 20}})",
       "gemm.straggler_warn_pct: 20 is above gemm.straggler_fail_pct (12)"},
      {R"({"pcie": {"fail_fraction": 0.8}})",
       "pcie.warn_fraction: 0.7 is below pcie.fail_fraction (0.8)"},
      {R"({"nvlink": {"warn_fraction": 0.5}})",
       "nvlink.warn_fraction: 0.5 is below nvlink.fail_fraction (0.6)"},
      {R"({"hbm": {"fail_fraction": 0.9}})",
       "hbm.warn_fraction: 0.7 is below hbm.fail_fraction (0.9)"},
      {R"({"rdma": {"warn_fraction": 0.7}})",
       "rdma.warn_fraction: 0.7 is below rdma.fail_fraction (0.75)"},
      {R"({"inventory": {"temperature_fail_c": 90, "bogus": 1}})", "inventory.bogus: unknown key"},
      {R"({"inventory": {"temperature_warn_c": 70, "temperature_warn_c": 71}})",
       "inventory.temperature_warn_c: duplicate key"},
      {R"({"schema": "preflight.thresholds/2"})",
       "schema: unsupported schema \"preflight.thresholds/2\""},
      {R"({"schema": 1})", "schema: expected a string, got number"},
      {R"({"sku": ["h100"]})", "sku: expected a string, got array"},
      {"{\n  \"inventory\": {\n    \"temperature_warn_c\": 80,\n  }\n}",
       "parse error at line 4, column 3: syntax error"},
      {R"({"inventory": {"temperature_warn_c": 1e400}})", "parse error: number overflow"},
      {"{} trailing", "parse error at line 1, column"},
      {"", "parse error at line 1, column 1"},
      {" \n\t ", "parse error at line 2"},
      {"[]", "top level: expected an object"},
      {R"("inventory")", "top level: expected an object"},
      {"42", "top level: expected an object"},
      {std::string(1000, '[') + std::string(1000, ']'), "top level: nesting deeper than 8"},
      {std::string(100000, '{'), "top level: nesting deeper than 8"},
      {R"({"inventory": {"temperature_warn_c": [[[[[[[[[1]]]]]]]]]}})",
       "top level: nesting deeper than 8"},
      // A control character in a key is escaped, so the message stays one line.
      {R"({"inventory": {"a\nb": 1}})", "inventory.a\\x0ab: unknown key"},
      {R"({"inventory": {"[[[[[[[[[[[[\"{{{{{{{{{{": 1}})", "unknown key"},
  };
  for (const auto& c : cases) {
    INFO("document: " << c.document.substr(0, 200));
    Thresholds t = h100_by_flag();
    const auto before = t.values();
    const std::string message = override_error(t, c.document);
    CHECK_THAT(message, Catch::StartsWith("hostile.json: ") && Catch::Contains(c.expected));
    CHECK(message.find('\n') == std::string::npos);
    CHECK(t.values() == before);
    CHECK(t.overridden().empty());
    CHECK(t.overrides_file().empty());
  }
}

TEST_CASE("thresholds: a failed document keeps earlier overrides") {
  Thresholds t = h100_by_flag();
  t.apply_overrides(R"({"inventory": {"temperature_warn_c": 60}})", "first.json");
  const auto before = t.values();
  CHECK_THROWS_WITH(
      t.apply_overrides(R"({"inventory": {"temperature_warn_c": 61, "x": 1}})", "second.json"),
      "second.json: inventory.x: unknown key");
  CHECK(t.values() == before);
  CHECK(t.overrides_file() == "first.json");
  CHECK(t.overridden() == std::vector<std::string>{"inventory.temperature_warn_c"});
}

TEST_CASE("thresholds: files are read with limits") {
  TempDir dir;

  SECTION("a valid file is applied and recorded") {
    const auto path = dir.file("ok.json", R"({"inventory": {"foreign_memory_fail_mib": 512}})");
    Thresholds t = h100_by_flag();
    t.apply_overrides_file(path.string());
    CHECK(t.get("inventory.foreign_memory_fail_mib") == 512);
    CHECK(t.overrides_file() == path.string());
  }
  SECTION("errors inside the file name the path and the key") {
    const auto path = dir.file("bad.json", R"({"inventory": {"nope": 1}})");
    Thresholds t = h100_by_flag();
    CHECK_THROWS_WITH(t.apply_overrides_file(path.string()),
                      path.string() + ": inventory.nope: unknown key");
  }
  SECTION("an empty file") {
    const auto path = dir.file("empty.json", "");
    Thresholds t = h100_by_flag();
    CHECK_THROWS_WITH(t.apply_overrides_file(path.string()),
                      Catch::Contains(path.string() + ": parse error at line 1, column 1"));
  }

  Thresholds t = h100_by_flag();
  const auto before = t.values();
  SECTION("a file that does not exist") {
    const std::string path = (dir.path() / "missing.json").string();
    CHECK_THROWS_WITH(t.apply_overrides_file(path),
                      path + ": cannot open: No such file or directory");
  }
  SECTION("a directory") {
    CHECK_THROWS_WITH(t.apply_overrides_file(dir.path().string()),
                      Catch::Contains("is a directory, not a regular file"));
  }
  SECTION("a FIFO is refused without blocking") {
    const std::string path = (dir.path() / "fifo").string();
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    CHECK_THROWS_WITH(t.apply_overrides_file(path), path + ": not a regular file");
  }
  SECTION("a file over 1 MiB") {
    const auto path = dir.file("big.json", "{" + std::string(1024 * 1024, ' ') + "}");
    CHECK_THROWS_WITH(t.apply_overrides_file(path.string()), path.string() + ": larger than 1 MiB");
  }
  CHECK(t.values() == before);
  CHECK(t.overrides_file().empty());
}

namespace {

std::string read_doc(const std::string& relative) {
  std::ifstream in(std::string(PREFLIGHT_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE(
    "thresholds: each check's page lists exactly its keys, with the code's unit, range and "
    "generic value, and thresholds.md's index lists them") {
  using namespace preflight;
  CheckRegistry registry;
  register_builtin_checks(registry);
  const std::string index = read_doc("docs/thresholds.md");
  // "| `gemm.fail_fraction_of_peak` | fraction | no | 0..1 | 0.5 | meaning |"
  const std::regex row(
      R"(^\|\s*`([a-z0-9_]+\.[a-z0-9_]+)`\s*\|\s*([^|]+?)\s*\|\s*(yes|no)\s*\|)"
      R"(\s*([0-9.e+]+)\.\.([0-9.e+]+)\s*\|\s*([0-9.e+]+)\s*\|\s*([^|]+?)\s*\|\s*$)");
  for (const Check* check : registry.all()) {
    const CheckInfo& info = check->info();
    INFO(info.name);
    std::map<std::string, std::smatch> documented;
    std::vector<std::string> order;
    std::istringstream lines(read_doc("docs/checks/" + info.name + ".md"));
    std::vector<std::string> kept;  // the smatch refers to its line
    for (std::string line; std::getline(lines, line);) kept.push_back(line);
    for (const std::string& line : kept) {
      std::smatch m;
      if (!std::regex_match(line, m, row)) continue;
      CHECK(documented.emplace(m[1], m).second);
      order.push_back(m[1]);
    }
    std::vector<std::string> declared;
    for (const ThresholdSpec& spec : info.thresholds) {
      const std::string key(spec.key);
      declared.push_back(key);
      INFO(key);
      const auto it = documented.find(key);
      REQUIRE(it != documented.end());
      const std::smatch& m = it->second;
      CHECK(m[2] == std::string(spec.unit));
      CHECK((m[3] == "yes") == spec.integer);
      CHECK(std::stod(m[4]) == spec.min_value);
      CHECK(std::stod(m[5]) == spec.max_value);
      CHECK(std::stod(m[6]) == spec.generic);
      CHECK(m[7] == std::string(spec.description));
    }
    CHECK(order == declared);
    // The index: "- [gemm](checks/gemm.md#threshold-keys): `gemm.a`, `gemm.b`".
    const std::string link = "](checks/" + info.name + ".md#threshold-keys): ";
    const auto at = index.find(link);
    if (declared.empty()) {
      CHECK(at == std::string::npos);
      continue;
    }
    REQUIRE(at != std::string::npos);
    const auto start = at + link.size();
    const std::string listed_line = index.substr(start, index.find('\n', start) - start);
    std::vector<std::string> listed;
    const std::regex quoted("`([a-z0-9_.]+)`");
    for (auto it = std::sregex_iterator(listed_line.begin(), listed_line.end(), quoted);
         it != std::sregex_iterator(); ++it) {
      listed.push_back((*it)[1]);
    }
    CHECK(listed == declared);
  }
}

TEST_CASE(
    "thresholds: a baseline block is kept whole, printed back, and refused naming the field") {
  const std::string figure =
      R"({"check": "gemm", "entity": "gpu3", "metric": "bf16.tflops_median", "unit": "TFLOP/s",
          "median": 750, "node_spread": 0.01, "run_spread": 0.008, "limit": 712.5, "nodes": 40,
          "runs": 200})";
  const std::string good = R"({"schema": "preflight.thresholds/1", "baseline": {
      "learned_at": "2026-11-28T00:00:00Z", "verdicts": 200,
      "groups": [{"id": "hgx-h100", "figures": [)" +
                           figure + "]}]}}";
  Thresholds t = h100_by_flag();
  REQUIRE(t.baseline() == nullptr);
  t.apply_overrides(good, "site.json");
  REQUIRE(t.baseline() != nullptr);
  const preflight::BaselineGroup* group = t.baseline()->find("hgx-h100");
  REQUIRE(group != nullptr);
  const preflight::FigureBaseline* f = group->find("gemm", "gpu3", "bf16.tflops_median");
  REQUIRE(f != nullptr);
  CHECK(f->limit == 712.5);
  CHECK(f->nodes == 40);
  CHECK(group->find("gemm", "gpu2", "bf16.tflops_median") == nullptr);
  CHECK(t.baseline()->find("hgx-h200") == nullptr);
  // The printed thresholds carry it, and are accepted back as they are.
  Thresholds again = h100_by_flag();
  again.apply_overrides(t.to_json_text(), "printed.json");
  REQUIRE(again.baseline() != nullptr);
  CHECK(again.baseline()->groups.at(0).figures.at(0).limit == 712.5);

  // Bad blocks: one line naming the field, and nothing applied.
  Thresholds fresh = h100_by_flag();
  const auto with_figure = [](const std::string& body) {
    return R"({"baseline": {"groups": [{"id": "hgx-h100", "figures": [)" + body + "]}]}}";
  };
  CHECK(override_error(fresh, R"({"baseline": []})") ==
        "hostile.json: baseline: expected an object");
  CHECK_THAT(override_error(fresh, with_figure(R"({"check": "gemm", "metric": "x", "median": 10,
                                                   "limit": 11})")),
             Catch::Contains("baseline.groups[0].figures[0].limit") &&
                 Catch::Contains("above the median"));
  CHECK_THAT(override_error(fresh, with_figure(R"({"check": "gemm", "metric": "x",
                                                   "median": "fast", "limit": 1})")),
             Catch::Contains("baseline.groups[0].figures[0].median"));
  CHECK_THAT(override_error(fresh, with_figure(R"({"metric": "x", "median": 2, "limit": 1})")),
             Catch::Contains("baseline.groups[0].figures[0].check: missing"));
  CHECK_THAT(override_error(fresh, with_figure(figure + "," + figure)),
             Catch::Contains("given twice"));
  CHECK_THAT(override_error(fresh, R"({"baseline": {"groups": [{"id": "a"}, {"id": "a"}]}})"),
             Catch::Contains("baseline.groups[1].id"));
  CHECK(fresh.baseline() == nullptr);
}
