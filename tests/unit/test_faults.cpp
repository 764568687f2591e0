#include <catch2/catch.hpp>

#include "checks/inventory/inventory_faults.hpp"
#include "preflight/check.hpp"
#include "preflight/errors.hpp"
#include "preflight/faults.hpp"

using namespace preflight;

namespace {

std::vector<FaultKindSpec> kinds() {
  auto k = runner_fault_kinds();
  for (const auto& i : inventory_fault_kinds()) k.push_back(i);
  FaultKindSpec slow;
  slow.kind = "nvlink-slow";
  slow.targets = {TargetType::pair};
  slow.value = FaultValue::number;
  slow.min_value = 0.01;
  slow.max_value = 1;
  k.push_back(slow);
  FaultKindSpec down;
  down.kind = "rdma-down";
  down.targets = {TargetType::nic};
  k.push_back(down);
  return k;
}

std::string error_of(const std::string& spec) {
  try {
    parse_fault(spec, kinds());
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("faults: valid specs parse into kind, value and target") {
  auto f = parse_fault("hang@check=inventory", kinds());
  CHECK(f.kind == "hang");
  CHECK(f.target.type == TargetType::check);
  CHECK(f.target.name == "inventory");
  CHECK(f.target.entity() == "inventory");

  f = parse_fault("ecc-uncorrectable:3@gpu=7", kinds());
  CHECK(f.number == Approx(3));
  CHECK(f.target.entity() == "gpu7");

  f = parse_fault("ecc-uncorrectable@gpu=0", kinds());
  CHECK_FALSE(f.number.has_value());

  f = parse_fault("nvlink-slow:0.5@pair=1-3", kinds());
  CHECK(f.target.index == 1);
  CHECK(f.target.index2 == 3);
  CHECK(f.target.entity() == "gpu1-gpu3");

  f = parse_fault("rdma-down@nic=mlx5_1", kinds());
  CHECK(f.target.entity() == "mlx5_1");

  f = parse_fault("throttle:hw-thermal@gpu=2", kinds());
  CHECK(f.word == "hw-thermal");
  CHECK(f.spec == "throttle:hw-thermal@gpu=2");
}

TEST_CASE("faults: malformed specs are rejected with a message naming the problem") {
  struct Case {
    const char* spec;
    const char* expect;
  };
  const Case cases[] = {
      {"", "empty fault spec"},
      {"mig-on", "exactly one '@'"},
      {"mig-on@gpu=0@gpu=1", "exactly one '@'"},
      {"bogus@gpu=0", "unknown kind 'bogus'"},
      {"MIG-ON@gpu=0", "malformed kind"},
      {"mig-on@disk=0", "unknown target type 'disk'"},
      {"mig-on@gpu", "must be TYPE=VALUE"},
      {"mig-on@gpu=-1", "non-negative whole number"},
      {"mig-on@gpu=x", "non-negative whole number"},
      {"mig-on@check=inventory", "takes a gpu target, not check"},
      {"hang@gpu=0", "takes a check target, not gpu"},
      {"mig-on:3@gpu=0", "takes no value"},
      {"temperature@gpu=0", "needs a value"},
      {"temperature:hot@gpu=0", "is not a number"},
      {"temperature:900@gpu=0", "outside 0..200"},
      {"temperature:nan@gpu=0", "is not a number"},
      {"throttle:fast@gpu=0", "is not one of"},
      {"nvlink-slow:0.5@pair=1-1", "two different GPUs"},
      {"nvlink-slow:0.5@pair=1", "pair=I-J"},
      {"rdma-down@nic=mlx5;rm", "must be 1-64 letters"},
  };
  for (const auto& c : cases) {
    INFO("spec: " << c.spec);
    CHECK_THAT(error_of(c.spec), Catch::Contains(c.expect));
  }
  CHECK_THAT(error_of(std::string(300, 'a')), Catch::Contains("longer than 200"));
}

TEST_CASE("faults: the plan finds faults by kind and target, the last one winning") {
  FaultPlan plan({parse_fault("temperature:80@gpu=1", kinds()),
                  parse_fault("temperature:95@gpu=1", kinds()),
                  parse_fault("hang@check=inventory", kinds())});
  REQUIRE(plan.for_gpu("temperature", 1) != nullptr);
  CHECK(*plan.for_gpu("temperature", 1)->number == Approx(95));
  CHECK(plan.for_gpu("temperature", 0) == nullptr);
  CHECK(plan.for_check("hang", "inventory") != nullptr);
  CHECK(plan.for_check("hang", "gemm") == nullptr);
  CHECK(plan.of_kind("temperature").size() == 2);
  CHECK_FALSE(plan.empty());
}

TEST_CASE("faults: every fault kind names the finding codes it must produce") {
  for (const auto& k : kinds()) {
    if (k.kind == "nvlink-slow" || k.kind == "rdma-down") continue;  // test-only kinds
    INFO(k.kind);
    CHECK_FALSE(k.codes.empty());
    CHECK_FALSE(k.description.empty());
  }
}
