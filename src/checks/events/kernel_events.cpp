#include "checks/events/kernel_events.hpp"

#include <cctype>

namespace preflight {

namespace {

bool is_hex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}
bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The length of a PCI address starting at `at` ("0000:3b:00.0", "00000000:3B:00", "3b:00.0"
// is not one: the domain is required), 0 when there is none.
std::size_t pci_address_at(std::string_view s, std::size_t at) {
  if (at > 0 && is_hex(s[at - 1])) return 0;
  std::size_t i = at;
  while (i < s.size() && is_hex(s[i]) && i - at < 9) ++i;
  const std::size_t domain = i - at;
  if (domain < 4 || domain > 8) return 0;
  for (int part = 0; part < 2; ++part) {  // ":bus" and ":device", two hex digits each
    if (i + 2 >= s.size() || s[i] != ':' || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) return 0;
    i += 3;
  }
  if (i < s.size() && is_hex(s[i])) return 0;  // a longer hex run: not a bus:device pair
  if (i + 1 < s.size() && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '7') i += 2;
  return i - at;
}

// The first (or last before `end`) PCI address in `s`; "" when none.
std::string_view find_pci_address(std::string_view s, bool last = false,
                                  std::size_t end = std::string_view::npos) {
  std::string_view found;
  const std::size_t stop = std::min(end, s.size());
  for (std::size_t i = 0; i < stop; ++i) {
    if (const std::size_t n = pci_address_at(s, i); n > 0) {
      found = s.substr(i, n);
      if (!last) return found;
      i += n - 1;
    }
  }
  return found;
}

std::optional<std::uint64_t> number_at(std::string_view s, std::size_t at) {
  std::uint64_t v = 0;
  std::size_t i = at;
  while (i < s.size() && is_digit(s[i]) && i - at < 9) v = v * 10 + (s[i++] - '0');
  if (i == at) return std::nullopt;
  return v;
}

// "NVRM: Xid (PCI:0000:3b:00): 79, pid=..." and "NVRM: Xid (0000:3b:00): 48, ...", also a MIG
// instance's "Xid (PCI:0000:01:00 GPU-I:05): 94". An NVSwitch's "SXid (PCI:...): 22013" is not
// a GPU's Xid.
std::optional<KernelEvent> xid_event(std::string_view m) {
  std::size_t open = m.find("Xid (");
  while (open != std::string_view::npos && open > 0 &&
         std::isalpha(static_cast<unsigned char>(m[open - 1])) != 0) {
    open = m.find("Xid (", open + 1);
  }
  if (open == std::string_view::npos) return std::nullopt;
  const std::size_t close = m.find(')', open);
  if (close == std::string_view::npos || close - open > 40) return std::nullopt;
  std::size_t at = close + 1;
  if (at < m.size() && m[at] == ':') ++at;
  while (at < m.size() && m[at] == ' ') ++at;
  const auto code = number_at(m, at);
  if (!code) return std::nullopt;
  KernelEvent e;
  e.kind = EventKind::xid;
  e.xid = static_cast<int>(*code);
  e.device = normalize_pci_address(find_pci_address(m.substr(open, close - open)), false);
  return e;
}

// "EDAC MC0: 1 CE memory read error on ...", "EDAC MC1: 2 UE ...".
std::optional<KernelEvent> edac_event(std::string_view m) {
  const std::size_t mc = m.find("EDAC MC");
  if (mc == std::string_view::npos) return std::nullopt;
  std::size_t at = m.find(": ", mc);
  if (at == std::string_view::npos || at - mc > 16) return std::nullopt;
  at += 2;
  const auto count = number_at(m, at);
  if (!count) return std::nullopt;
  while (at < m.size() && is_digit(m[at])) ++at;
  const std::string_view rest = m.substr(at);
  KernelEvent e;
  e.count = *count;
  if (rest.rfind(" CE", 0) == 0) {
    e.kind = EventKind::edac_corrected;
  } else if (rest.rfind(" UE", 0) == 0) {
    e.kind = EventKind::edac_uncorrected;
  } else {
    return std::nullopt;
  }
  return e;
}

// "Bank 4: a600000000020408": bit 61 (UC) of the bank's MCi_STATUS says whether the hardware
// corrected the error (Intel SDM vol. 3B, "IA32_MCi_STATUS"); nullopt without such a status.
std::optional<bool> bank_status_uncorrected(std::string_view m) {
  const std::size_t bank = m.find("Bank ");
  if (bank == std::string_view::npos) return std::nullopt;
  std::size_t at = m.find(": ", bank);
  if (at == std::string_view::npos || at - bank > 10) return std::nullopt;
  at += 2;
  std::size_t end = at;
  while (end < m.size() && is_hex(m[end])) ++end;
  if (end - at != 16) return std::nullopt;
  const char top = m[at];  // bits 63..60: VAL, OVER, UC, EN
  const int nibble = is_digit(top) ? top - '0' : (std::tolower(top) - 'a' + 10);
  if ((nibble & 0x8) == 0) return std::nullopt;  // not valid
  return (nibble & 0x2) != 0;
}

// Machine checks as the kernel's mce driver and firmware-first reporting (APEI GHES) print them.
// "Machine check events logged" is the kernel's note that it logged some, without their severity:
// counted as corrected, which only warns in numbers; a bank's status or a GHES record says more.
std::optional<KernelEvent> mce_event(std::string_view m) {
  const bool hardware = contains(m, "[Hardware Error]") || contains(m, "mce:") ||
                        contains(m, "Machine check") || contains(m, "machine check");
  if (!hardware) return std::nullopt;
  KernelEvent e;
  if (contains(m, "Machine Check: ")) {
    const auto uncorrected = bank_status_uncorrected(m);
    if (!uncorrected) return std::nullopt;
    e.kind = *uncorrected ? EventKind::mce_uncorrected : EventKind::mce_corrected;
    return e;
  }
  if (contains(m, "Machine check events logged") || contains(m, "Corrected error, no action") ||
      contains(m, "event severity: corrected") || contains(m, "single-bit ECC")) {
    e.kind = EventKind::mce_corrected;
    return e;
  }
  if (contains(m, "Uncorrected") || contains(m, "uncorrected") ||
      contains(m, "Fatal machine check") || contains(m, "event severity: fatal") ||
      contains(m, "multi-bit ECC") || contains(m, "Processor context corrupt")) {
    e.kind = EventKind::mce_uncorrected;
    return e;
  }
  return std::nullopt;
}

// "... 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)":
// the error is on the device the line starts with (older kernels: the port that reported it).
std::optional<KernelEvent> aer_event(std::string_view m) {
  const std::size_t at = m.find("PCIe Bus Error: severity=");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view severity = m.substr(at + 25);
  KernelEvent e;
  // "Corrected" and newer kernels' "Correctable"; "Uncorrected" / "Uncorrectable (Fatal)".
  if (severity.rfind("Correct", 0) == 0) {
    e.kind = EventKind::aer_corrected;
  } else if (contains(severity.substr(0, 40), "Non-Fatal")) {
    e.kind = EventKind::aer_nonfatal;
  } else if (contains(severity.substr(0, 40), "Fatal")) {
    e.kind = EventKind::aer_fatal;
  } else {
    return std::nullopt;
  }
  e.device = normalize_pci_address(find_pci_address(m, true, at));
  return e;
}

// "mlx5_core 0000:0c:00.0 ens1np0: Link down", "ice 0000:17:00.0 eth0: NIC Link is Down". A
// PCIe hot-plug slot's "Link Down" is not a network port.
std::optional<KernelEvent> link_event(std::string_view m) {
  if (contains(m, "pciehp")) return std::nullopt;
  KernelEvent e;
  if (contains(m, "Link down") || contains(m, "Link is Down") || contains(m, "link is down")) {
    e.kind = EventKind::link_down;
  } else if (contains(m, "Link up") || contains(m, "Link is Up") || contains(m, "link is up")) {
    e.kind = EventKind::link_up;
  } else {
    return std::nullopt;
  }
  e.device = normalize_pci_address(find_pci_address(m));
  if (e.device.empty()) return std::nullopt;  // a port preflight cannot name
  return e;
}

}  // namespace

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::xid:
      return "xid";
    case EventKind::mce_corrected:
      return "mce_corrected";
    case EventKind::mce_uncorrected:
      return "mce_uncorrected";
    case EventKind::edac_corrected:
      return "edac_corrected";
    case EventKind::edac_uncorrected:
      return "edac_uncorrected";
    case EventKind::aer_corrected:
      return "aer_corrected";
    case EventKind::aer_nonfatal:
      return "aer_nonfatal";
    case EventKind::aer_fatal:
      return "aer_fatal";
    case EventKind::link_down:
      return "link_down";
    case EventKind::link_up:
      return "link_up";
  }
  return "xid";
}

std::optional<EventKind> parse_event_kind(std::string_view text) {
  for (EventKind k :
       {EventKind::xid, EventKind::mce_corrected, EventKind::mce_uncorrected,
        EventKind::edac_corrected, EventKind::edac_uncorrected, EventKind::aer_corrected,
        EventKind::aer_nonfatal, EventKind::aer_fatal, EventKind::link_down, EventKind::link_up}) {
    if (to_string(k) == text) return k;
  }
  return std::nullopt;
}

std::string normalize_pci_address(std::string_view text, bool with_function) {
  const std::size_t n = pci_address_at(text, 0);
  if (n == 0) return "";
  text = text.substr(0, n);
  const std::size_t colon = text.find(':');
  std::string out;
  // The domain as four digits: NVML prints eight ("00000000"), the kernel four.
  const std::string_view domain = text.substr(0, colon);
  out.append(domain.size() > 4 ? domain.substr(domain.size() - 4) : domain);
  std::string_view rest = text.substr(colon);
  if (!with_function) {
    const std::size_t dot = rest.find('.');
    if (dot != std::string_view::npos) rest = rest.substr(0, dot);
  }
  out.append(rest);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view find_first_pci_address(std::string_view text) {
  return find_pci_address(text);
}

std::optional<KernelEvent> recognise_event(std::string_view m) {
  if (auto e = xid_event(m)) return e;
  if (contains(m, "fallen off the bus")) {
    KernelEvent e;
    e.kind = EventKind::xid;
    e.xid = 79;  // what the driver's Xid 79 says; some drivers print only this line
    e.device = normalize_pci_address(find_pci_address(m), false);
    return e;
  }
  if (auto e = edac_event(m)) return e;
  if (contains(m, "EDAC")) return std::nullopt;  // EDAC's other lines detail the one above
  if (auto e = aer_event(m)) return e;
  if (auto e = mce_event(m)) return e;
  return link_event(m);
}

}  // namespace preflight
