#include "gpu/runtime_library.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "gpu/loaded_library.hpp"

namespace preflight {
namespace {

constexpr const char* kLoaderPath = "the loader path (LD_LIBRARY_PATH, ld.so.cache)";

std::string executable_dir() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return {};
  const std::string path(buffer, static_cast<std::size_t>(n));
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// The file the loader mapped for `handle`: what `--version` and the verdict report.
std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      *map->l_name != '\0') {
    return map->l_name;
  }
  return fallback;
}

// Opens `what` (a path, or a bare soname for the loader's own search) and checks the symbol.
// Returns the handle, or null with `why_not` set.
void* try_open(const std::string& what, const std::string& symbol, std::string& why_not) {
  if (what.find('/') != std::string::npos) {
    struct stat st {};
    if (stat(what.c_str(), &st) != 0) {
      why_not = "no such file";
      return nullptr;
    }
  }
  void* handle = open_library(what, why_not);
  if (handle == nullptr) return nullptr;
  dlerror();
  if (!symbol.empty() && dlsym(handle, symbol.c_str()) == nullptr) {
    why_not = "loaded, but has no " + symbol + " (not the library this build needs)";
    dlclose(handle);  // nothing of it has run: safe to unload
    return nullptr;
  }
  return handle;
}

}  // namespace

std::string RuntimeLibrary::problem() const {
  if (found()) return {};
  std::string text = spec.name + " (" + spec.soname + ") not found; looked at: ";
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    text += (i > 0 ? "; " : "") + attempts[i].place + ": " + attempts[i].why_not;
  }
  if (!overridden && !spec.env_override.empty()) {
    text += " (install it, or set " + spec.env_override + " to its path)";
  }
  return text;
}

std::vector<std::string> runtime_library_folders(int cuda_major) {
  std::vector<std::string> folders;
  const auto add = [&folders](const std::string& folder) {
    if (std::find(folders.begin(), folders.end(), folder) == folders.end()) {
      folders.push_back(folder);
    }
  };
  const std::string exe = executable_dir();
  if (!exe.empty()) add(exe + "/../lib/preflight/");
  add("");  // the loader path
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    add(std::string(home) + "/lib64/");
  }
  add("/usr/local/cuda-" + std::to_string(cuda_major) + "/lib64/");
  add("/usr/local/cuda/lib64/");
  return folders;
}

RuntimeLibrary load_runtime_library(const RuntimeLibrarySpec& spec,
                                    const std::vector<std::string>& folders) {
  RuntimeLibrary out;
  out.spec = spec;
  const char* override_path =
      spec.env_override.empty() ? nullptr : std::getenv(spec.env_override.c_str());
  std::vector<std::pair<std::string, std::string>> places;  // (what to open, how to name it)
  if (override_path != nullptr && *override_path != '\0') {
    places.emplace_back(override_path, "$" + spec.env_override + "=" + override_path);
    out.overridden = true;
  } else {
    for (const std::string& folder : folders) {
      if (folder.empty()) {
        places.emplace_back(spec.soname, kLoaderPath);
      } else {
        places.emplace_back(folder + spec.soname, folder + spec.soname);
      }
    }
  }
  for (const auto& [what, place] : places) {
    std::string why_not;
    void* handle = try_open(what, spec.symbol, why_not);
    out.attempts.push_back({place, why_not});
    if (handle != nullptr) {
      out.handle = handle;
      out.path = loaded_path(handle, what);
      break;
    }
  }
  return out;
}

}  // namespace preflight
