#include "checks/inventory/pci_scan.hpp"

#include <dirent.h>

#include <fstream>

namespace preflight {

namespace {

std::optional<unsigned long> read_hex(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return std::nullopt;
  try {
    return std::stoul(text, nullptr, 16);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<int> count_nvidia_gpus_on_pci(const std::string& devices_dir) {
  DIR* dir = opendir(devices_dir.c_str());
  if (dir == nullptr) return std::nullopt;
  int count = 0;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    const std::string base = devices_dir + "/" + name;
    const auto vendor = read_hex(base + "/vendor");
    const auto pci_class = read_hex(base + "/class");
    if (!vendor || !pci_class || *vendor != 0x10de) continue;
    const unsigned long class_code = *pci_class >> 8;  // drop the programming interface
    if (class_code == 0x0300 || class_code == 0x0302) ++count;
  }
  closedir(dir);
  return count;
}

}  // namespace preflight
