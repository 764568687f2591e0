// The search for the CUDA libraries loaded at run time (src/gpu/runtime_library.hpp): the order
// of the places, what is said about each, the environment override. A real shared library (the
// fake NVML) stands in for cuBLAS, copied into folders of a temporary tree.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu/runtime_library.hpp"
#include "support/scoped_env.hpp"

using namespace preflight;
namespace fs = std::filesystem;

namespace {

struct Tree {
  fs::path root;
  Tree() {
    std::string pattern = (fs::temp_directory_path() / "preflight-rtlib-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    root = pattern;
    fs::create_directories(root / "empty");
    fs::create_directories(root / "has");
    fs::copy_file(FAKE_NVML_PATH, root / "has" / "libstandin.so.7");
  }
  ~Tree() {
    std::error_code ignored;
    fs::remove_all(root, ignored);
  }
  std::string folder(const char* name) const { return (root / name).string() + "/"; }
};

RuntimeLibrarySpec standin(std::string symbol = "nvmlInit_v2") {
  return {"Stand-in", "libstandin.so.7", "PREFLIGHT_TEST_STANDIN_LIBRARY", std::move(symbol)};
}

}  // namespace

TEST_CASE("runtime library: the first place that has it is used; every place before is named") {
  Tree tree;
  const RuntimeLibrary lib =
      load_runtime_library(standin(), {tree.folder("empty"), "", tree.folder("has")});
  REQUIRE(lib.found());
  CHECK(lib.problem().empty());
  CHECK(fs::equivalent(lib.path, tree.root / "has" / "libstandin.so.7"));
  REQUIRE(lib.attempts.size() == 3);
  CHECK(lib.attempts[0].place == tree.folder("empty") + "libstandin.so.7");
  CHECK(lib.attempts[0].why_not == "no such file");
  CHECK_THAT(lib.attempts[1].place, Catch::Contains("loader path"));
  CHECK_THAT(lib.attempts[1].why_not, Catch::Contains("cannot open shared object file"));
  CHECK(lib.attempts[2].why_not.empty());
}

TEST_CASE("runtime library: not found says which library, which soname and every place looked") {
  Tree tree;
  const RuntimeLibrary lib = load_runtime_library(standin(), {tree.folder("empty"), ""});
  CHECK_FALSE(lib.found());
  CHECK(lib.path.empty());
  const std::string problem = lib.problem();
  CHECK_THAT(problem, Catch::StartsWith("Stand-in (libstandin.so.7) not found; looked at: "));
  CHECK_THAT(problem, Catch::Contains(tree.folder("empty") + "libstandin.so.7: no such file"));
  CHECK_THAT(problem, Catch::Contains("the loader path"));
  CHECK_THAT(problem, Catch::Contains("set PREFLIGHT_TEST_STANDIN_LIBRARY to its path"));

  SECTION("a file that lacks the library's function is passed over, and said so") {
    const RuntimeLibrary wrong =
        load_runtime_library(standin("cublasGemmEx"), {tree.folder("has")});
    CHECK_FALSE(wrong.found());
    REQUIRE(wrong.attempts.size() == 1);
    CHECK(wrong.attempts[0].why_not ==
          "loaded, but has no cublasGemmEx (not the library this build needs)");
  }
}

TEST_CASE("runtime library: the environment variable names the only place") {
  Tree tree;
  const std::string file = (tree.root / "has" / "libstandin.so.7").string();
  {
    test::ScopedEnv env("PREFLIGHT_TEST_STANDIN_LIBRARY", file.c_str());
    const RuntimeLibrary lib = load_runtime_library(standin(), {tree.folder("empty")});
    REQUIRE(lib.found());
    CHECK(lib.overridden);
    REQUIRE(lib.attempts.size() == 1);
    CHECK(lib.attempts[0].place == "$PREFLIGHT_TEST_STANDIN_LIBRARY=" + file);
  }
  {
    test::ScopedEnv env("PREFLIGHT_TEST_STANDIN_LIBRARY", "/nonexistent/libstandin.so.7");
    const RuntimeLibrary lib = load_runtime_library(standin(), {tree.folder("has")});
    CHECK_FALSE(lib.found());
    REQUIRE(lib.attempts.size() == 1);
    CHECK_THAT(lib.problem(), Catch::Contains("/nonexistent/libstandin.so.7: no such file"));
    CHECK_THAT(lib.problem(), !Catch::Contains("set PREFLIGHT_TEST_STANDIN_LIBRARY"));
  }
}

TEST_CASE("runtime library: the places in order, bundled folder first, the toolkit's last") {
  test::ScopedEnv env("CUDA_HOME", "/opt/toolkit");
  const std::vector<std::string> folders = runtime_library_folders(13);
  REQUIRE(folders.size() == 5);
  CHECK_THAT(folders[0], Catch::EndsWith("/../lib/preflight/"));
  CHECK(folders[1].empty());  // the loader path
  CHECK(folders[2] == "/opt/toolkit/lib64/");
  CHECK(folders[3] == "/usr/local/cuda-13/lib64/");
  CHECK(folders[4] == "/usr/local/cuda/lib64/");
  test::ScopedEnv same("CUDA_HOME", "/usr/local/cuda");
  CHECK(runtime_library_folders(12).size() == 4);  // no place twice
}
