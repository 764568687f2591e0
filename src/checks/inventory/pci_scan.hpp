#pragma once
#include <optional>
#include <string>

namespace preflight {

// Counts NVIDIA display/3D controllers (vendor 0x10de, class 0x0300xx or 0x0302xx) under a
// sysfs PCI devices directory. NVSwitches and audio functions have other classes and are not
// counted. nullopt when the directory cannot be read. The PCI bus still lists a GPU that has
// fallen off the driver, which is what makes this a useful second count.
std::optional<int> count_nvidia_gpus_on_pci(
    const std::string& devices_dir = "/sys/bus/pci/devices");

}  // namespace preflight
