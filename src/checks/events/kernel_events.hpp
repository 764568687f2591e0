#pragma once
// What a kernel-log message says about the hardware: an Xid from NVIDIA's driver, a GPU fallen
// off the bus, a machine check, an EDAC memory report, a PCIe AER report, a network port going
// down or up. Pure functions of the message text (the fuzz target feeds them garbage).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace preflight {

enum class EventKind {
  xid,               // NVRM: Xid (PCI:0000:3b:00): 79, ...; "fallen off the bus" is Xid 79
  mce_corrected,     // "Machine check events logged", "[Hardware Error]: Corrected error"
  mce_uncorrected,   // "Uncorrected hardware memory error", fatal machine checks
  edac_corrected,    // "EDAC MC0: 1 CE memory read error ..."
  edac_uncorrected,  // "EDAC MC1: 1 UE ..."
  aer_corrected,     // "... PCIe Bus Error: severity=Corrected, ..."
  aer_nonfatal,      // severity=Uncorrected (Non-Fatal)
  aer_fatal,         // severity=Uncorrected (Fatal)
  link_down,         // "mlx5_core 0000:0c:00.0 ens1np0: Link down", "NIC Link is Down"
  link_up,
};

std::string_view to_string(EventKind kind);  // "xid", "mce_corrected", ...
std::optional<EventKind> parse_event_kind(std::string_view text);

struct KernelEvent {
  EventKind kind = EventKind::xid;
  int xid = 0;  // the Xid code (kind xid)
  // The PCI device the message names, lower case: "0000:3b:00" for an Xid (the driver prints
  // domain:bus:device), "0000:3b:00.0" for AER and network ports; "" for the host (machine
  // checks, EDAC).
  std::string device;
  std::uint64_t count = 1;  // EDAC's "N CE": the errors one message reports
};

// The event `message` reports; nullopt for any other message.
std::optional<KernelEvent> recognise_event(std::string_view message);

// A PCI address as preflight compares them: lower case, a 4-digit domain ("00000000:3B:00.0"
// from NVML -> "0000:3b:00.0"). `with_function` false drops ".F" (how Xid lines name a GPU).
// "" when `text` is not a PCI address.
std::string normalize_pci_address(std::string_view text, bool with_function = true);

// The first PCI address in `text` (domain required), as written; "" when none.
std::string_view find_first_pci_address(std::string_view text);

}  // namespace preflight
