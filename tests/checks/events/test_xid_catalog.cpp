// The Xid table: ordered, one row per code, every row with its source, and the same rows on its
// page (docs/checks/events-xid.md), so what the docs tell an operator is what the check does.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "checks/common/xid_catalog.hpp"

using namespace preflight;

TEST_CASE("xid table: ordered by code, unique, each row named and sourced") {
  const auto& rows = xid_catalog();
  REQUIRE(rows.size() > 100);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("Xid " << rows[i].code);
    CHECK_FALSE(rows[i].name.empty());
    CHECK_FALSE(rows[i].source.empty());
    if (i > 0) CHECK(rows[i - 1].code < rows[i].code);
    CHECK(find_xid(rows[i].code) == &rows[i]);
  }
  CHECK(find_xid(0) == nullptr);
  CHECK(find_xid(100000) == nullptr);
  // The rows the issue and the corpus rest on.
  CHECK(find_xid(79)->bucket == XidBucket::reboot);
  CHECK(find_xid(48)->bucket == XidBucket::reset_gpu);
  CHECK(find_xid(95)->bucket == XidBucket::reset_gpu);
  for (int app : {13, 31, 43, 45}) CHECK(find_xid(app)->bucket == XidBucket::application);
}

TEST_CASE("xid table: docs/checks/events-xid.md lists exactly the same rows") {
  std::ifstream in(PREFLIGHT_SOURCE_DIR "/docs/checks/events-xid.md");
  REQUIRE(in.good());
  const std::regex row(R"(^\| (\d+) \| (.+?) \| (\w+) \| (.+?) \|$)");
  std::map<int, std::string> documented;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) documented[std::stoi(m[1])] = m[3];
  }
  CHECK(documented.size() == xid_catalog().size());
  for (const XidSpec& x : xid_catalog()) {
    INFO("Xid " << x.code);
    const auto it = documented.find(x.code);
    REQUIRE(it != documented.end());
    CHECK(it->second == std::string(to_string(x.bucket)));
  }
}
