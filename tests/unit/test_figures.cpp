// Figure declarations: how a check's typed metrics become labelled Prometheus samples and fleet
// figures (include/preflight/figures.hpp), and that the built-in checks' declarations hold
// together.
#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include "preflight/check.hpp"
#include "preflight/figures.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_figures.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;

TEST_CASE("figures: a name pattern matches segment by segment and captures its labels") {
  const auto bf16 = match_metric_name("{dtype}.tflops_median", "bf16.tflops_median");
  REQUIRE(bf16);
  CHECK(*bf16 == Labels{{"dtype", "bf16"}});
  CHECK_FALSE(match_metric_name("{dtype}.tflops_median", "tflops_median"));
  CHECK_FALSE(match_metric_name("{dtype}.tflops_median", "bf16.x.tflops_median"));
  CHECK_FALSE(match_metric_name("{dtype}.tflops_median", ".tflops_median"));
  CHECK_FALSE(match_metric_name("h2d_gbps", "h2d_all_gbps"));
  const auto nccl = match_metric_name("{op}.{bytes}.busbw_gbps", "allgather.1048576.busbw_gbps");
  REQUIRE(nccl);
  CHECK(*nccl == Labels{{"op", "allgather"}, {"bytes", "1048576"}});
}

TEST_CASE("figures: entity labels, fixed labels, then the name's labels") {
  const FigureExport gpu = Figure<1>("{dtype}.tflops_median", "TFLOP/s", "h")
                               .per({"gpu"})
                               .exported_as("f")
                               .feeds("gemm_{dtype}_tflops")
                               .spec();
  const auto labels = figure_labels(gpu, {"gpu12", "fp64.tflops_median", 60, "TFLOP/s"});
  REQUIRE(labels);
  CHECK(*labels == Labels{{"gpu", "12"}, {"dtype", "fp64"}});
  CHECK(with_labels(gpu.fleet_figure, *labels) == "gemm_fp64_tflops");
  CHECK_FALSE(figure_labels(gpu, {"", "fp64.tflops_median", 60, ""}));        // not per GPU
  CHECK_FALSE(figure_labels(gpu, {"mlx5_0", "fp64.tflops_median", 60, ""}));  // not a GPU
  CHECK_FALSE(figure_labels(gpu, {"gpu1x", "fp64.tflops_median", 60, ""}));

  const FigureExport pcie = Figure<0>("h2d_gbps", "GB/s", "h")
                                .per({"gpu"})
                                .with_fixed({{"direction", "h2d"}})
                                .exported_as("f_bytes_per_second")
                                .spec();
  CHECK(*figure_labels(pcie, {"gpu0", "h2d_gbps", 53, "GB/s"}) ==
        Labels{{"gpu", "0"}, {"direction", "h2d"}});

  const FigureExport pair = Figure<0>("pair_gbps", "Gb/s", "h")
                                .per({"src", "dst"})
                                .exported_as("f_bits_per_second")
                                .spec();
  CHECK(*figure_labels(pair, {"mlx5_0-mlx5_3", "pair_gbps", 390, "Gb/s"}) ==
        Labels{{"src", "mlx5_0"}, {"dst", "mlx5_3"}});
  CHECK_FALSE(figure_labels(pair, {"mlx5_0", "pair_gbps", 390, "Gb/s"}));

  const FigureExport node = Figure<0>("unidirectional_min_gbps", "GB/s", "h")
                                .exported_as("f_bytes_per_second")
                                .feeds("nvlink_gbps")
                                .spec();
  CHECK(figure_labels(node, {"", "unidirectional_min_gbps", 370, "GB/s"}) == Labels{});
  CHECK_FALSE(figure_labels(node, {"gpu0", "unidirectional_min_gbps", 370, "GB/s"}));
}

TEST_CASE("figures: every built-in declaration is usable by the reporters") {
  const std::regex family("preflight_[a-z0-9_]+");
  const std::regex label("[a-z_][a-z0-9_]*");
  std::set<std::string> checks;
  CheckRegistry registry;
  register_builtin_checks(registry);
  for (const std::string& name : registry.names()) checks.insert(name);
  const FigureCatalogue catalogue = test::builtin_figures();
  CHECK_FALSE(catalogue.empty());
  for (const CheckFigures& c : catalogue) {
    INFO(c.check);
    CHECK(checks.count(c.check) == 1);
    for (const FigureExport& f : c.exports) {
      INFO(f.metric);
      CHECK(std::regex_match(f.family, family));
      CHECK_FALSE(f.help.empty());
      CHECK(f.scale > 0);
      // Declared with the unit its metric is recorded in, and the scale follows from it.
      CHECK_FALSE(f.unit.empty());
      const auto base = base_unit_of(f.unit);
      CHECK(f.scale == (base ? base->scale : 1.0));
      CHECK(f.entity_labels.size() <= 2);
      for (const auto& l : f.entity_labels) CHECK(std::regex_match(l, label));
      // A fleet figure's placeholders are all labels of the metric name.
      Labels named;
      if (const auto m = match_metric_name(f.metric, f.metric)) {
        for (const auto& l : *m) named.emplace_back(l.first, "x");
      }
      CHECK(with_labels(f.fleet_figure, named).find('{') == std::string::npos);
    }
    if (c.bars) {
      const auto median = match_metric_name(c.bars->median, c.bars->median);
      REQUIRE(median);
      REQUIRE(median->size() == 1);
      CHECK(median->front().first == c.bars->group_label);
    }
  }
}

TEST_CASE("thresholds: every warning limit names a failure limit that exists") {
  int ordered = 0;
  const Thresholds all = test::builtin_thresholds(nullptr, "test");
  for (const ThresholdSpec& spec : all.specs()) {
    if (spec.fail_key.empty()) continue;
    ++ordered;
    INFO(spec.key);
    CHECK(all.find_spec(spec.fail_key) != nullptr);
    CHECK(spec.fail_key != spec.key);
  }
  CHECK(ordered == 10);
}

TEST_CASE("figures: a figure records its name, labels and unit as declared") {
  const Figure<2> busbw = Figure<2>("{op}.{bytes}.busbw_gbps", "GB/s", "bus bandwidth")
                              .exported_as("preflight_test_busbw_bytes_per_second");
  const Metric m = busbw("", 12.5, {"allgather", "1048576"});
  CHECK(m.entity.empty());
  CHECK(m.name == "allgather.1048576.busbw_gbps");
  CHECK(m.value == 12.5);
  CHECK(m.unit == "GB/s");
  CHECK(busbw.spec().scale == 1e9);  // from the unit, not written twice
  CHECK(busbw.exported());
  // What it records, its export matches, with the labels it was given.
  const auto labels = figure_labels(busbw.spec(), m);
  REQUIRE(labels);
  CHECK(*labels == Labels{{"op", "allgather"}, {"bytes", "1048576"}});

  const Figure<0> plain("products", "count", "matrix products timed");
  CHECK_FALSE(plain.exported());
  CHECK(plain("gpu0", 3).key() == "gpu0.products");
  CHECK(Figure<0>("probe_ms", "ms", "probe").exported_as("preflight_probe_seconds").spec().scale ==
        1e-3);
}

TEST_CASE("figures: a declaration that does not hold together is refused") {
  // As many label values as the name has segments: the type says how many.
  CHECK_THROWS_AS(Figure<1>("tflops_median", "TFLOP/s", "h"), std::logic_error);
  CHECK_THROWS_AS(Figure<0>("{dtype}.tflops_median", "TFLOP/s", "h"), std::logic_error);
  // A family in the wrong base unit for the figure's unit.
  CHECK_THROWS_AS(Figure<0>("h2d_gbps", "GB/s", "h").exported_as("preflight_pcie_bits_per_second"),
                  std::logic_error);
  CHECK_THROWS_AS(Figure<0>("probe_ms", "ms", "h").exported_as("preflight_probe_ms"),
                  std::logic_error);
  CHECK_NOTHROW(Figure<0>("gpu_count", "count", "h").exported_as("preflight_gpus"));
}
