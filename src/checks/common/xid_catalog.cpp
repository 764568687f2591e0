// NVIDIA's Xid codes as data: one row per code, ordered by code, each with the bucket that decides
// the events check's finding and the source of that bucket. docs/checks/events-xid.md lists the
// same rows and explains how the catalogue's resolution buckets map to XidBucket.
//
// "Xid Catalog" below is NVIDIA's "Analyzing Xid Errors with the Xid Catalog",
// https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html (the edition that lists
// Xids 1-172 and cites drivers up to R575 / CUDA 12.9), column "Resolution Bucket (Immediate
// Action)", with its "Fault Resolution Buckets" and "XID 144-150 Decode" sheets. Names are short
// paraphrases of the catalogue's Description column, or, for codes it marks "Unused", of the older
// Xid listing (docs.nvidia.com/deploy/xid-errors, pre-Ampere causes table).
#include "checks/common/xid_catalog.hpp"

#include <algorithm>

namespace preflight {

namespace {

constexpr std::string_view kRestartApp = "Xid Catalog, immediate action RESTART_APP";
constexpr std::string_view kResetGpu = "Xid Catalog, immediate action RESET_GPU";
constexpr std::string_view kIgnore = "Xid Catalog, immediate action IGNORE";
constexpr std::string_view kUnused = "Xid Catalog: Unused on Ampere and newer; CONTACT_SUPPORT";
constexpr std::string_view kNvlink5Reset =
    "Xid Catalog, WORKFLOW_NVLINK5_ERR: the 144-150 decode asks at most RESET_GPU";
constexpr std::string_view kNvlink5Ignore =
    "Xid Catalog, WORKFLOW_NVLINK5_ERR: every 144-150 decode row is IGNORE";
constexpr std::string_view kPowerSmoothing =
    "Xid Catalog: no bucket; its text asks nothing of the GPU (power smoothing only)";
constexpr std::string_view kDetailOf48 =
    "Xid Catalog: no bucket; a detail of Xid 48, judged as 48 (WORKFLOW_XID_48 solo: RESET_GPU)";

constexpr XidBucket kInfo = XidBucket::informational;
constexpr XidBucket kApp = XidBucket::application;
constexpr XidBucket kReset = XidBucket::reset_gpu;
constexpr XidBucket kReboot = XidBucket::reboot;
constexpr XidBucket kService = XidBucket::service;

}  // namespace

const std::vector<XidSpec>& xid_catalog() {
  static const std::vector<XidSpec> table{
      {1, "Invalid or corrupted push buffer stream (unused)", kService, kUnused},
      {2, "Invalid or corrupted push buffer stream (unused)", kService, kUnused},
      {3, "Invalid or corrupted push buffer stream (unused)", kService, kUnused},
      {4, "Invalid push buffer stream or semaphore timeout (unused)", kService, kUnused},
      {5, "FIFO runout overflow (unused)", kService, kUnused},
      {6, "Invalid or corrupted push buffer stream (unused)", kService, kUnused},
      {7, "Invalid or corrupted push buffer address (unused)", kService, kUnused},
      {8, "GPU stopped processing", kApp, kRestartApp},
      {9, "Driver error programming GPU (unused)", kService, kUnused},
      {10, "Graphics single-step error (unused)", kService, kUnused},
      {11, "Invalid or corrupted push buffer stream", kApp, kRestartApp},
      {12, "Driver error handling GPU exception (unused)", kService, kUnused},
      {13, "Graphics engine exception", kApp,
       "Xid Catalog, immediate action RESTART_APP (WORKFLOW_XID_13 if it repeats on one GPU)"},
      {14, "Fake or injected error", kInfo, kIgnore},
      {15, "Scanline timeout (unused)", kService, kUnused},
      {16, "Display engine hung (unused)", kService, kUnused},
      {17, "Channel parameter error (unused)", kService, kUnused},
      {18, "Bus mastering disabled in PCI config space (unused)", kService, kUnused},
      {19, "Display engine error (unused)", kService, kUnused},
      {20, "Invalid or corrupted MPEG push buffer (unused)", kService, kUnused},
      {21, "Invalid or corrupted motion estimation push buffer (unused)", kService, kUnused},
      {22, "Invalid or corrupted video processor push buffer (unused)", kService, kUnused},
      {23, "Robust channel logging enabled (unused)", kService, kUnused},
      {24, "GPU semaphore timeout (unused)", kService, kUnused},
      {25, "Invalid or illegal push buffer stream", kApp, kRestartApp},
      {26, "Framebuffer timeout (unused)", kService, kUnused},
      {27, "Video processor exception (unused)", kService, kUnused},
      {28, "Video processor exception (unused)", kService, kUnused},
      {29, "Video processor exception (unused)", kService, kUnused},
      {30, "GPU semaphore access error (unused)", kService, kUnused},
      {31, "GPU memory page fault", kApp,
       "Xid Catalog, immediate action RESTART_APP (WORKFLOW_XID_31 if it repeats on one GPU)"},
      {32, "Invalid or corrupted push buffer stream (PBDMA)", kApp,
       "Xid Catalog, immediate action RESTART_APP; its text blames PCIe quality if it repeats"},
      {33, "Internal micro-controller error (unused)", kService, kUnused},
      {34, "Video processor exception (unused)", kService, kUnused},
      {35, "Video processor exception (unused)", kService, kUnused},
      {36, "Video processor exception (unused)", kService, kUnused},
      {37, "Driver firmware error", kInfo, kIgnore},
      {38, "Driver firmware error (watchdog timeout)", kInfo, kIgnore},
      {39, "Copy engine 0 exception", kApp, kRestartApp},
      {40, "Copy engine 1 exception", kApp, kRestartApp},
      {41, "Copy engine 2 exception", kApp, kRestartApp},
      {42, "Video image compositor error (unused)", kService, kUnused},
      {43, "GPU stopped processing (application fault)", kApp,
       "Xid Catalog: IGNORE; its text puts the fault on the application, GPU healthy"},
      {44, "Graphics engine fault during context switch", kInfo, kIgnore},
      {45, "Preemptive cleanup after earlier errors", kApp,
       "Xid Catalog: WORKFLOW_XID_45 (with other Xids follow them); logged when an app is torn "
       "down"},
      {46, "GPU stopped processing (timeout)", kReset, kResetGpu},
      {47, "Video encoder 0 error (unused)", kService, kUnused},
      {48, "Double-bit ECC error", kReset,
       "Xid Catalog: WORKFLOW_XID_48, solo RESET_GPU, with 63/64 drain and reset"},
      {49, "Silent running level set by registry (unused)", kService, kUnused},
      {50, "Silent running transition after an error (unused)", kService, kUnused},
      {51, "Silent running stress test failure (unused)", kService, kUnused},
      {52, "Silent running transition on temperature rise (unused)", kService, kUnused},
      {53, "Clocks reduced for temperature (unused)", kService, kUnused},
      {54, "Auxiliary power not connected to the board", kService,
       "Xid Catalog, immediate action CHECK_MECHANICALS"},
      {55, "Temperature read error (unused)", kService, kUnused},
      {56, "Display engine error (unused)", kService, kUnused},
      {57, "Error programming video memory interface (unused)", kService, kUnused},
      {58, "Unstable video memory interface (unused)", kService, kUnused},
      {59, "Internal micro-controller error (unused)", kService, kUnused},
      {60, "Video processor exception (SEC2)", kApp, kRestartApp},
      {61, "Internal micro-controller breakpoint or warning (unused)", kService, kUnused},
      {62, "Internal micro-controller halt", kReset, kResetGpu},
      {63, "Row remapping or page retirement recorded", kInfo,
       "Xid Catalog: IGNORE; the remap applies at the next reset (inventory ROW_REMAP_PENDING)"},
      {64, "Row remapping or page retirement failed", kService,
       "Xid Catalog: RESET_GPU then CONTACT_SUPPORT; a reset leaves the remap failed"},
      {65, "Video encoder 1 error (unused)", kService, kUnused},
      {66, "Illegal register access by driver", kInfo, kIgnore},
      {67, "Illegal access by driver (verification)", kInfo, kIgnore},
      {68, "Video decoder 0 exception", kApp, kRestartApp},
      {69, "Graphics engine class error", kApp, kRestartApp},
      {70, "Copy engine 3 error", kApp, kRestartApp},
      {71, "Copy engine 4 error", kApp, kRestartApp},
      {72, "Copy engine 5 error", kApp, kRestartApp},
      {73, "Video encoder 2 error (unused)", kService, kUnused},
      {74, "NVLink error", kReset,
       "Xid Catalog: WORKFLOW_NVLINK_ERR; its text: a GPU reset or node reboot clears it"},
      {75, "Copy engine 6 error", kApp, kRestartApp},
      {76, "Copy engine 7 error", kApp, kRestartApp},
      {77, "Copy engine 8 error", kApp, kRestartApp},
      {78, "vGPU start error", kService,
       "Xid Catalog: UPDATE_SWFW (driver or vGPU type mismatch); no reset clears it"},
      {79, "GPU has fallen off the bus", kReboot, "Xid Catalog, immediate action RESTART_BM"},
      {80, "Corrupted data sent to GPU", kApp, kRestartApp},
      {81, "VGA subsystem error (unused)", kService, kUnused},
      {82, "JPEG decoder 0 error", kApp, kRestartApp},
      {83, "Video decoder 1 error", kApp, kRestartApp},
      {84, "Video decoder 2 error", kApp, kRestartApp},
      {85, "Copy engine 9 error", kApp, kRestartApp},
      {86, "Optical flow accelerator exception", kApp, kRestartApp},
      {87, "Driver telemetry report (unused)", kService, kUnused},
      {88, "Video decoder 3 error", kApp, kRestartApp},
      {89, "Video decoder 4 error", kApp, kRestartApp},
      {90, "L2 cache error (unused)", kService, kUnused},
      {91, "Reserved (unused)", kService, kUnused},
      {92, "High single-bit ECC error rate", kInfo,
       "Xid Catalog: IGNORE (CONTACT_SUPPORT if it keeps returning)"},
      {93, "InfoROM wear limit exceeded (non-fatal)", kInfo, kIgnore},
      {94, "Contained memory error", kApp,
       "Xid Catalog: RESTART_APP; reset the GPU when convenient"},
      {95, "Uncontained memory error", kReset, kResetGpu},
      {96, "Video decoder 5 error", kApp, kRestartApp},
      {97, "Video decoder 6 error", kApp, kRestartApp},
      {98, "Video decoder 7 error", kApp, kRestartApp},
      {99, "JPEG decoder 1 error", kApp, kRestartApp},
      {100, "JPEG decoder 2 error", kApp, kRestartApp},
      {101, "JPEG decoder 3 error", kApp, kRestartApp},
      {102, "JPEG decoder 4 error", kApp, kRestartApp},
      {103, "JPEG decoder 5 error", kApp, kRestartApp},
      {104, "JPEG decoder 6 error", kApp, kRestartApp},
      {105, "JPEG decoder 7 error", kApp, kRestartApp},
      {106, "SMBPBI test message", kInfo, kIgnore},
      {107, "SMBPBI test message (silent)", kInfo, kIgnore},
      {108, "NVLink remote translation error (unused)", kInfo, kIgnore},
      {109, "Context switch timeout", kReset,
       "Xid Catalog: RESET_GPU (k8s-device-plugin skips 109 as an app error)"},
      {110, "Security fault", kReset,
       "Xid Catalog: RESET_GPU (its text: cold reset the system if it returns)"},
      {111, "Display bundle error (unused)", kService, kUnused},
      {112, "Display supervisor error (unused)", kService, kUnused},
      {113, "DisplayPort link training failure (unused)", kService, kUnused},
      {114, "Display pipeline underflow (unused)", kService, kUnused},
      {115, "Display core channel error (unused)", kService, kUnused},
      {116, "Display window channel error (unused)", kService, kUnused},
      {117, "Display cursor channel error (unused)", kService, kUnused},
      {118, "Display pixel pipeline error (unused)", kService, kUnused},
      {119, "GSP RPC timeout", kReset, kResetGpu},
      {120, "GSP error", kReset, kResetGpu},
      {121, "C2C link error (corrected)", kInfo,
       "Xid Catalog: IGNORE; reset at a service window to retrain the link"},
      {122, "SPI PMU RPC read failure (unused)", kService, kUnused},
      {123, "SPI PMU RPC write failure (unused)", kService, kUnused},
      {124, "SPI PMU RPC erase failure (unused)", kService, kUnused},
      {125, "InfoROM file system error (unused)", kService, kUnused},
      {126, "Copy engine 10 error", kApp, kRestartApp},
      {127, "Copy engine 11 error", kApp, kRestartApp},
      {128, "Copy engine 12 error", kApp, kRestartApp},
      {129, "Copy engine 13 error", kApp, kRestartApp},
      {130, "Copy engine 14 error", kApp, kRestartApp},
      {131, "Copy engine 15 error", kApp, kRestartApp},
      {132, "Copy engine 16 error", kApp, kRestartApp},
      {133, "Copy engine 17 error", kApp, kRestartApp},
      {134, "Copy engine 18 error", kApp, kRestartApp},
      {135, "Copy engine 19 error", kApp, kRestartApp},
      {136, "NVLink link training failed", kReset, kResetGpu},
      {137, "NVLink privilege error", kApp,
       "Xid Catalog: IGNORE; XID_137_FLOW puts it on the application (bad peer access)"},
      {138, "Deep learning accelerator error (unused)", kService, kUnused},
      {139, "Optical flow accelerator 1 error", kApp, kRestartApp},
      {140, "Unrecovered ECC error", kReset, kResetGpu},
      {141, "CUDA fast path error", kInfo, kIgnore},
      {142, "Video encoder 3 error", kService, "Xid Catalog, immediate action CONTACT_SUPPORT"},
      {143, "GPU initialization error", kReset, kResetGpu},
      {144, "NVLink SAW error", kReset, kNvlink5Reset},
      {145, "NVLink RLW error", kReset, kNvlink5Reset},
      {146, "NVLink TLW error", kReset, kNvlink5Reset},
      {147, "NVLink TREX error", kInfo, kNvlink5Ignore},
      {148, "NVLink NVLPW control error", kInfo, kNvlink5Ignore},
      {149, "NVLink NETIR error", kReset, kNvlink5Reset},
      {150, "NVLink MSE error", kReset, kNvlink5Reset},
      {151, "Key rotation error", kReboot, "Xid Catalog, immediate action RESTART_VM"},
      {152, "DLA SMMU error", kInfo, kIgnore},
      {153, "DLA timeout", kInfo, kIgnore},
      {154, "GPU recovery action changed", kInfo,
       "Xid Catalog: XID_154, informational; the Xid it follows decides"},
      {155, "NVLink software-defined error (link taken down)", kReset, kResetGpu},
      {156, "Resource retirement event", kReset, kResetGpu},
      {157, "Resource retirement failure", kInfo,
       "Xid Catalog: IGNORE (no repair left; CONTACT_SUPPORT if it returns)"},
      {158, "GPU fatal timeout", kReset, kResetGpu},
      {159, "CHI non-data error", kReset,
       "Xid Catalog: CHECK_UVM (RESET_GPU where UVM or vGPU is in use, as on CUDA nodes)"},
      {160, "Channel retirement event", kInfo, kIgnore},
      {161, "Channel retirement failure", kInfo, kIgnore},
      {162, "Power smoothing circuitry re-engaged", kInfo, kPowerSmoothing},
      {163, "Power smoothing circuitry disengaged", kInfo, kPowerSmoothing},
      {164, "Power smoothing circuitry low lifetime", kInfo, kPowerSmoothing},
      {165, "Power smoothing circuitry lifetime exhausted", kInfo, kPowerSmoothing},
      {167, "PCIe fatal timeout", kReboot,
       "Xid Catalog: no bucket; leptonai/gpud xid.go: reboot (like 79, RESTART_BM)"},
      {168, "Errors in write-protected region (less memory)", kReboot,
       "Xid Catalog: no bucket; its text: enable ECC or boot again"},
      {169, "Internal micro-controller halt (SEC2)", kReset,
       "Xid Catalog: no bucket; judged as 62 (RESET_GPU); gpud says reboot"},
      {171, "Uncorrectable DRAM error (detail of 48)", kReset, kDetailOf48},
      {172, "Uncorrectable SRAM error (detail of 48)", kReset, kDetailOf48},
  };
  return table;
}

const XidSpec* find_xid(int code) {
  const auto& table = xid_catalog();
  auto it = std::lower_bound(table.begin(), table.end(), code,
                             [](const XidSpec& row, int c) { return row.code < c; });
  if (it == table.end() || it->code != code) return nullptr;
  return &*it;
}

std::string_view to_string(XidBucket bucket) {
  switch (bucket) {
    case XidBucket::informational:
      return "informational";
    case XidBucket::application:
      return "application";
    case XidBucket::reset_gpu:
      return "reset_gpu";
    case XidBucket::reboot:
      return "reboot";
    case XidBucket::service:
      return "service";
  }
  return "service";
}

}  // namespace preflight
