// The finding catalogue. Codes are stable: they are what admins grep for and what drain
// reasons carry. docs/findings.md lists the same codes (tests/unit/test_catalogue.cpp keeps the
// two in step, and fails if the sources emit a code missing here).
#include "preflight/catalogue.hpp"

namespace preflight {

const std::vector<FindingSpec>& finding_catalogue_entries() {
  static const std::vector<FindingSpec> entries = {
      // Runner: deadlines, signals, tool errors.
      {"CHECK_TIMEOUT", Severity::fail,
       "The check did not finish within its deadline (a GPU or driver call that does not return "
       "looks like this).",
       "Look for Xid errors in the kernel log (dmesg) and a GPU that nvidia-smi cannot query; "
       "drain the node and reset or reboot it."},
      {"CHECK_INTERRUPTED", Severity::fail,
       "The run was stopped by SIGTERM or SIGINT while this check ran; it was not completed.",
       "Rerun preflight with enough time (Slurm PrologEpilogTimeout, --timeout)."},
      {"CHECK_ERROR", Severity::fail,
       "The check stopped on an unexpected error inside preflight; the node was not judged by it.",
       "Report the message to the preflight maintainers; rerun to see whether it repeats."},
      {"RUN_INCOMPLETE", Severity::fail,
       "Checks were not run (the --timeout was reached, discovery failed, or an earlier check "
       "hung), so the node was not fully judged.",
       "Fix the cause named in the message (a longer --timeout, or the hung GPU); an incomplete "
       "run is never a healthy verdict."},
      {"RUN_INTERRUPTED", Severity::fail,
       "The run was stopped by SIGTERM or SIGINT before every check finished.",
       "Rerun preflight with enough time (Slurm PrologEpilogTimeout, --timeout)."},
      {"DISCOVERY_TIMEOUT", Severity::fail,
       "Listing the GPUs through NVML and CUDA did not finish within its deadline.",
       "The driver is not answering: check nvidia-smi and dmesg for Xid errors; reset the GPUs or "
       "reboot the node."},
      {"INJECTED_FAULT_NOT_EXERCISED", Severity::warn,
       "An --inject-fault drill tested nothing: the check its fault acts in was skipped or not run "
       "(a GPU check on a node without GPUs), or the pass it starts in never came.",
       "Run the drill where the check runs (a GPU node), or drill a check that runs here "
       "(inventory); a from-pass=N fault needs a burn-in that reaches pass N."},

      // inventory: GPUs and driver visible.
      {"NO_GPU_VISIBLE", Severity::fail,
       "No GPU is visible: the NVIDIA driver is not loaded or not installed, or no GPU answers.",
       "Check nvidia-smi and lsmod | grep nvidia; install or reload the driver; if the node has "
       "no GPUs, run with --expect-gpus 0."},
      {"NO_GPU_EXPECTED", Severity::info,
       "No GPU is visible, which --expect-gpus 0 accepts; GPU checks are skipped.", "None needed."},
      {"GPU_COUNT_MISMATCH", Severity::fail,
       "The number of GPUs visible differs from --expect-gpus (a GPU fell off the bus, or the "
       "expectation is wrong).",
       "Compare nvidia-smi -L and lspci | grep -i nvidia; a missing GPU usually needs a reboot or "
       "hardware service."},
      {"GPU_MISSING_FROM_DRIVER", Severity::fail,
       "The PCI bus shows more NVIDIA GPUs than the driver lists: a GPU has fallen off the bus "
       "or failed to initialise.",
       "Check dmesg for Xid 79 (fallen off the bus) or RmInitAdapter failures; reset the GPU or "
       "reboot; service the GPU if it does not come back."},
      {"NVML_UNAVAILABLE", Severity::warn,
       "GPUs are visible to CUDA but NVML could not be loaded, so their health could not be read.",
       "Install the driver's NVML library (libnvidia-ml.so.1) or set PREFLIGHT_NVML_LIBRARY to "
       "its path."},
      {"CUDA_DRIVER_TOO_OLD", Severity::fail,
       "The NVIDIA driver supports an older CUDA than this preflight package was built with, so "
       "no GPU can be used by it. A tool-installation problem, not a node fault: exit 3.",
       "Install the preflight package built for the driver's CUDA (preflight-cuda12 for R525 to "
       "R575 drivers), or NVIDIA's forward-compatibility package (cuda-compat-13-0), or update "
       "the driver to the branch the message names (docs/install.md).",
       Blame::tool},
      {"TOOL_LIBRARY_MISSING", Severity::fail,
       "A CUDA library this check needs (cuBLAS, NCCL), loaded at run time, was not found where "
       "preflight looks for it. A tool-installation problem, not a node fault: exit 3.",
       "Install the library the message names (the package's Recommends: cuBLAS and NCCL of the "
       "package's CUDA major), or set PREFLIGHT_CUBLAS_LIBRARY / PREFLIGHT_NCCL_LIBRARY to its "
       "path (docs/install.md).",
       Blame::tool},
      {"CUDA_UNAVAILABLE", Severity::fail,
       "NVML sees GPUs but the CUDA runtime cannot use them (driver too old for this build, or a "
       "broken installation).",
       "Check the CUDA driver version against the runtime preflight was built with; update the "
       "driver or reinstall it."},
      {"GPU_NOT_VISIBLE_TO_CUDA", Severity::fail,
       "NVML lists this GPU but CUDA does not see it, so no workload can use it.",
       "Unset CUDA_VISIBLE_DEVICES for preflight; otherwise check dmesg for Xid errors and reset "
       "the GPU."},
      {"NVML_READ_ERROR", Severity::warn,
       "An NVML query on this GPU failed with an error other than not-supported, so a health "
       "reading is missing.",
       "Run nvidia-smi -q on the GPU; persistent errors point at a driver or GPU fault."},
      {"SKU_UNKNOWN", Severity::warn,
       "The GPU model is not in preflight's SKU table; generic thresholds are used.",
       "Provide thresholds for this model with --thresholds FILE (see docs/thresholds.md)."},
      {"MIXED_GPU_MODELS", Severity::warn,
       "The node has GPUs of more than one model; thresholds follow the first GPU.",
       "Confirm the node is meant to be mixed; otherwise a GPU was swapped for the wrong part."},

      // inventory: configuration.
      {"MIG_ENABLED", Severity::fail,
       "MIG mode is enabled on this GPU, so a training job cannot use it whole.",
       "Disable MIG: nvidia-smi -i <gpu> -mig 0, then reset the GPU."},
      {"ECC_DISABLED", Severity::fail,
       "ECC is disabled on this GPU, so memory errors go undetected.",
       "Enable ECC: nvidia-smi -i <gpu> -e 1, then reboot or reset the GPU."},
      {"PERSISTENCE_MODE_OFF", Severity::warn,
       "Persistence mode is off: the driver tears down GPU state between jobs, which slows job "
       "start and hides some errors.",
       "Run nvidia-persistenced (preferred) or nvidia-smi -pm 1."},

      // inventory: memory health.
      {"ECC_UNCORRECTABLE_VOLATILE", Severity::fail,
       "Uncorrectable ECC errors occurred since the driver was loaded; data on this GPU may be "
       "corrupt.",
       "Drain the node; reset the GPU so row remapping can take effect; if errors return, RMA."},
      {"ECC_UNCORRECTABLE_AGGREGATE", Severity::warn,
       "This GPU has had uncorrectable ECC errors in its lifetime (none since the driver loaded).",
       "Watch the count; check row remapping status with nvidia-smi -q -d ROW_REMAPPER."},
      {"ECC_CORRECTABLE_HIGH", Severity::warn,
       "Correctable ECC errors since the driver loaded exceed the threshold, a sign of weakening "
       "memory.",
       "Watch the trend; run the hbm check in the burnin profile; RMA if it keeps rising."},
      {"RETIRED_PAGES_PENDING", Severity::fail,
       "Memory pages are pending retirement; they take effect only after a GPU reset.",
       "Reset the GPU (nvidia-smi -r) or reboot the node, then rerun preflight."},
      {"ROW_REMAP_PENDING", Severity::fail,
       "A memory row remapping is pending; it takes effect only after a GPU reset.",
       "Reset the GPU (nvidia-smi -r) or reboot the node, then rerun preflight."},
      {"ROW_REMAP_FAILED", Severity::fail,
       "Row remapping failed: the GPU has run out of spare rows for bad memory.",
       "Drain the node and RMA the GPU."},

      // inventory: running state.
      {"CLOCKS_THROTTLED_HW", Severity::fail,
       "Clocks are held down by hardware slowdown, thermal slowdown or power brake while the GPU "
       "is idle.",
       "Check cooling, fans and power supplies; nvidia-smi -q -d PERFORMANCE shows the reason."},
      {"CLOCKS_THROTTLED_POWER_CAP", Severity::warn,
       "Clocks are held down by the software power cap while the GPU is idle.",
       "Check the power limit (nvidia-smi -q -d POWER) against the SKU's default."},
      {"TEMPERATURE_HIGH", Severity::warn, "The idle GPU is hotter than the warning threshold.",
       "Check airflow, fans and inlet temperature before the GPU reaches its slowdown "
       "temperature under load."},
      {"TEMPERATURE_CRITICAL", Severity::fail, "The idle GPU is hotter than the failure threshold.",
       "Drain the node and fix cooling; a GPU this hot at idle will throttle under load."},
      {"PCIE_LINK_DEGRADED", Severity::fail,
       "The GPU's PCIe link runs below what the GPU supports or the SKU requires (generation or "
       "width).",
       "Reseat the GPU or riser, check the slot and BIOS PCIe settings; lspci -vv shows LnkSta "
       "against LnkCap."},
      {"NVLINK_INACTIVE", Severity::fail,
       "Fewer NVLink links are active on this GPU than the SKU has; peer traffic will be slow or "
       "fall back to PCIe.",
       "Check nvidia-smi nvlink -s and the fabric manager service; reset the GPUs or service the "
       "baseboard."},
      {"FOREIGN_PROCESSES", Severity::warn,
       "Other processes hold a context on this GPU before the job starts.",
       "Find them with nvidia-smi; stale processes from an earlier job should be killed."},
      {"FOREIGN_MEMORY_HIGH", Severity::fail,
       "Other processes hold more GPU memory than the threshold; the next job may run out of "
       "memory.",
       "Kill the processes listed by nvidia-smi or reset the GPU."},
      {"GPU_UNRESPONSIVE", Severity::fail,
       "A small kernel and copy on this GPU failed, returned wrong data, or did not complete in "
       "time, or the driver did not return from context creation or allocation.",
       "Check dmesg for Xid errors; reset the GPU or reboot; RMA if it repeats."},
      {"GPU_NOT_PROBED", Severity::warn,
       "The responsiveness probe did not run on this GPU, or was cut short, because the "
       "check's time ran out before the probe's own timeout, so the GPU is unverified.",
       "Give the run a longer --timeout, then rerun."},

      // gemm: matrix products verified on every GPU (docs/checks/gemm.md).
      {"GEMM_NAN_INF", Severity::fail,
       "A matrix product of finite inputs produced NaN or Inf outputs: the GPU computed garbage "
       "(silent data corruption that a job would not notice).",
       "Drain the node; rerun preflight run --checks gemm --profile burnin to confirm; RMA the "
       "GPU with the verdict (serial, UUID)."},
      {"GEMM_CHECKSUM_MISMATCH", Severity::fail,
       "Column sums of a product's output disagree with the sums computed from its inputs: the "
       "GPU returned a wrong result (silent data corruption).",
       "Drain the node; rerun preflight run --checks gemm --profile burnin to confirm; RMA the "
       "GPU with the verdict (serial, UUID)."},
      {"GEMM_NOT_REPEATABLE", Severity::fail,
       "The same product on the same inputs gave different output bits on this GPU from one "
       "repeat to the next (silent data corruption; a healthy GPU is deterministic here).",
       "Drain the node; rerun preflight run --checks gemm --profile burnin to confirm; RMA the "
       "GPU with the verdict (serial, UUID)."},
      {"GEMM_CONSENSUS_MINORITY", Severity::fail,
       "This GPU's output differs from the output that the majority of the node's GPUs of the "
       "same model computed for the same product (silent data corruption).",
       "Drain the node; rerun preflight run --checks gemm --profile burnin to confirm; RMA the "
       "GPU with the verdict (serial, UUID)."},
      {"GEMM_CONSENSUS_TIE", Severity::fail,
       "GPUs of the same model computed different outputs for the same product and split evenly, "
       "so no majority tells which one is wrong; every GPU of the tie is reported.",
       "Drain the node; rerun preflight run --checks gemm --profile burnin and look for a "
       "checksum or repeatability finding that names the faulty GPU; RMA that GPU with the "
       "verdict (serial, UUID)."},
      {"GEMM_TFLOPS_LOW", Severity::fail,
       "The GPU's median matrix-product speed is below the failure share of the SKU's sustained "
       "figure where it has one, else of its datasheet peak.",
       "Read the telemetry in the message: power cap (check nvidia-smi -q -d POWER), thermal "
       "slowdown (airflow, fans, inlet temperature), HW slowdown or power brake (PSU, power "
       "brake signal); nvidia-smi -q -d PERFORMANCE shows the active reasons. Drain until fixed."},
      {"GEMM_TFLOPS_MARGINAL", Severity::warn,
       "The GPU's median matrix-product speed is below the warning share of the SKU's sustained "
       "figure where it has one, else of its datasheet peak.",
       "Read the telemetry in the message: power cap, thermal slowdown (airflow, fans, inlet "
       "temperature) or HW slowdown (power brake, PSU); nvidia-smi -q -d PERFORMANCE shows the "
       "active reasons."},
      {"GEMM_STRAGGLER", Severity::warn,
       "The GPU is slower at matrix products than the median of the node's GPUs of its model by "
       "more than the warning percentage; a synchronous job runs at the pace of its slowest GPU.",
       "Read the telemetry in the message: power cap, thermal slowdown (airflow, fans, inlet "
       "temperature) or HW slowdown (power brake, PSU); nvidia-smi -q -d PERFORMANCE shows the "
       "active reasons."},
      {"GEMM_STRAGGLER_SEVERE", Severity::fail,
       "The GPU is slower at matrix products than the median of the node's GPUs of its model by "
       "more than the failure percentage; it would hold back every job on the node.",
       "Drain the node; read the telemetry in the message: power cap, thermal slowdown (airflow, "
       "fans, inlet temperature) or HW slowdown (power brake, PSU); nvidia-smi -q -d PERFORMANCE "
       "shows the active reasons."},
      {"GEMM_CUDA_ERROR", Severity::fail,
       "A CUDA or cuBLAS call failed while the GPU ran or verified matrix products.",
       "Check dmesg for Xid errors; reset the GPU (nvidia-smi -r) or reboot the node, then rerun "
       "preflight; RMA if it repeats."},
      {"GEMM_TIMEOUT", Severity::fail,
       "Matrix products on this GPU did not complete before the check's deadline: the GPU or the "
       "driver hung.",
       "Check dmesg for Xid errors and whether nvidia-smi still answers; drain the node and reset "
       "the GPU or reboot."},
      {"GEMM_GPU_NOT_TESTED", Severity::warn,
       "Matrix products were not run on this GPU, so it is unverified; the message says why.",
       "Act on the message: free the GPU memory held by another process (nvidia-smi lists it), "
       "or fix why CUDA cannot see the GPU (CUDA_VISIBLE_DEVICES, Xid errors); then rerun."},
      {"PCIE_BANDWIDTH_LOW", Severity::fail,
       "A GPU's host-to-device, device-to-host or bidirectional copy bandwidth is below the "
       "failure share of what its PCIe link should carry; the message names the link (e.g. Gen5 "
       "x16 running Gen4 x16) and the figure.",
       "Reseat the GPU or its riser, check the slot's BIOS link settings and `lspci -vv` LnkSta "
       "against LnkCap; a link that trained down needs a reseat or a board/riser replacement. "
       "Drain until fixed."},
      {"PCIE_BANDWIDTH_MARGINAL", Severity::warn,
       "A GPU's host<->device copy bandwidth is below the warning share of what its PCIe link "
       "should carry.",
       "Compare `lspci -vv` LnkSta with LnkCap and check the NUMA placement of the job's host "
       "memory; rerun `preflight run --checks pcie` to confirm."},
      {"PCIE_SHARED_BANDWIDTH_LOW", Severity::fail,
       "With every GPU copying at once, this GPU gets less than the failure share of its fair "
       "share: its own link, at most the rate of the uplink it shares split among the GPUs behind "
       "it; the message names the uplink and the GPUs sharing it.",
       "Check the PCIe topology (`nvidia-smi topo -m`, `lspci -tv`) for a switch or root port "
       "shared by too many devices or trained down; fix the cabling or board, or the BIOS "
       "bifurcation settings."},
      {"PCIE_UPLINK_BANDWIDTH_LOW", Severity::fail,
       "With every GPU copying at once, the GPUs behind one PCIe uplink (the link from a switch "
       "or a root port up to the CPU; the entity is its root port's PCI address) together move "
       "less than the failure share of what that link carries.",
       "Check the uplink's link with `lspci -vv -s <root port>` (LnkSta against LnkCap) and "
       "`lspci -tv` for what else sits behind it; reseat or replace the switch board or cable, "
       "check the BIOS link settings. Drain until fixed."},
      {"NVLINK_NO_PEER_ACCESS", Severity::fail,
       "Two GPUs of an NVLink SKU cannot access each other's memory (no peer-to-peer path): "
       "collectives between them would fall back to slower paths.",
       "Check `nvidia-smi nvlink -s` and `nvidia-smi topo -m`; the fabric manager must run on "
       "NVSwitch systems (`systemctl status nvidia-fabricmanager`); reset the GPUs or reboot; RMA "
       "the baseboard if links stay down."},
      {"NVLINK_BANDWIDTH_LOW", Severity::fail,
       "GPU-to-GPU copy bandwidth of a pair is below the failure share of what the SKU's NVLinks "
       "carry: links are down or degraded.",
       "Check `nvidia-smi nvlink -s` and `-e` (error counters) for both GPUs; reset the GPUs or "
       "reboot; RMA the baseboard or GPU if links stay down. Drain until fixed."},
      {"NVLINK_BANDWIDTH_MARGINAL", Severity::warn,
       "GPU-to-GPU copy bandwidth of a pair is below the warning share of what the SKU's NVLinks "
       "carry.",
       "Check `nvidia-smi nvlink -e` for replay or CRC errors on both GPUs; rerun `preflight run "
       "--checks nvlink` to confirm."},
      {"HBM_BANDWIDTH_LOW", Severity::fail,
       "The GPU's device-local copy bandwidth (memory traffic, read plus write) is below the "
       "failure share of the SKU's memory bandwidth.",
       "Check clocks and slowdown reasons (`nvidia-smi -q -d PERFORMANCE,CLOCK`): a memory clock "
       "held low points to thermal or power limits; drain and RMA the GPU if it repeats on an "
       "idle, cool GPU."},
      {"HBM_BANDWIDTH_MARGINAL", Severity::warn,
       "The GPU's device-local copy bandwidth is below the warning share of the SKU's memory "
       "bandwidth.",
       "Check clocks and slowdown reasons (`nvidia-smi -q -d PERFORMANCE,CLOCK`) and rerun "
       "`preflight run --checks hbm`."},
      {"HBM_PATTERN_MISMATCH", Severity::fail,
       "GPU memory did not hold the words written to it: the pattern test read back bad words; the "
       "message gives their count and address ranges.",
       "Drain the node; check ECC counters and row remapping (`nvidia-smi -q -d "
       "ECC,ROW_REMAPPER`); reset the GPU to let pending remaps apply and rerun `preflight run "
       "--checks hbm --profile standard`; RMA the GPU if bad words remain."},
      {"BANDWIDTH_DATA_MISMATCH", Severity::fail,
       "Bytes that a bandwidth measurement copied arrived changed: the copy path (PCIe, NVLink or "
       "memory) corrupted data.",
       "Drain the node; check `dmesg` for Xid and AER errors and `nvidia-smi -q -d ECC`; rerun the "
       "check to confirm; reseat or RMA the component on the path named in the message."},
      {"BANDWIDTH_CUDA_ERROR", Severity::fail,
       "A CUDA call failed while a bandwidth check copied or tested memory on this GPU or pair.",
       "Check `dmesg` for Xid errors; if the message says out of memory, free the memory another "
       "process holds; otherwise reset the GPU or reboot and rerun."},
      {"BANDWIDTH_GPU_NOT_TESTED", Severity::warn,
       "CUDA cannot use this GPU, so its copies and memory were not measured: it is unverified.",
       "Fix why CUDA cannot see the GPU (inventory reports it: CUDA_VISIBLE_DEVICES, Xid "
       "errors, a GPU lost to the driver), then rerun."},
      {"BANDWIDTH_TIMEOUT", Severity::fail,
       "Copies or memory tests on this GPU or pair did not complete before the check's deadline: "
       "the GPU, the link or the driver hung.",
       "Check `dmesg` for Xid errors and whether nvidia-smi still answers; drain the node and "
       "reset the GPU or reboot."},
      // nccl: collectives across the node's GPUs (docs/checks/nccl.md).
      {"NCCL_INIT_FAILED", Severity::fail,
       "NCCL could not create the node's communicator (one rank per GPU, in one process): a job "
       "using NCCL on this node would fail at start-up.",
       "Read the NCCL error in the message; rerun with NCCL_DEBUG=INFO for details. Check that "
       "every GPU answers (`nvidia-smi`), that peer access and the fabric manager work on NVSwitch "
       "systems (`systemctl status nvidia-fabricmanager`), and `dmesg` for Xid errors."},
      {"NCCL_ERROR", Severity::fail,
       "An NCCL collective or a CUDA call around it failed after the communicator came up.",
       "Read the NCCL or CUDA error in the message; check `dmesg` for Xid errors and `nvidia-smi "
       "nvlink -s` for links down; reset the GPUs or reboot, then rerun `preflight run --checks "
       "nccl`."},
      {"NCCL_TIMEOUT", Severity::fail,
       "NCCL collectives (or creating the communicator) did not complete before the deadline; the "
       "communicators were aborted. A GPU, an NVLink or the driver hung.",
       "Check `dmesg` for Xid errors and whether `nvidia-smi` still answers; drain the node and "
       "reset the GPUs or reboot."},
      {"NCCL_DATA_MISMATCH", Severity::fail,
       "Data moved by an NCCL collective arrived changed. The entity is the GPU whose contribution "
       "arrived corrupt everywhere, the GPU that received everything corrupt, the pair between "
       "which it changed, or the node when the source cannot be told.",
       "Drain the node; check `dmesg` for Xid errors, `nvidia-smi -q -d ECC` and `nvidia-smi "
       "nvlink -e` (error counters) for the GPUs named; rerun `preflight run --checks "
       "nccl,nvlink,hbm`; RMA the GPU or baseboard named if it repeats."},
      {"NCCL_BUSBW_LOW", Severity::fail,
       "The node's NCCL bus bandwidth (all-gather or all-reduce, largest size) is below the "
       "failure share of the SKU's figure: collectives of every job on the node would be slow.",
       "Run `preflight run --checks nvlink,pcie` to find a slow link or GPU; check `nvidia-smi "
       "nvlink -s`, `nvidia-smi topo -m` and the fabric manager; compare with nccl-tests "
       "(docs/checks/nccl.md)."},
      {"NCCL_BUSBW_MARGINAL", Severity::warn,
       "The node's NCCL bus bandwidth is below the warning share of the SKU's figure.",
       "Rerun `preflight run --checks nccl` on an idle node; compare with nccl-tests "
       "(docs/checks/nccl.md) and check NVLink error counters (`nvidia-smi nvlink -e`)."},
      {"NCCL_GPU_NOT_TESTED", Severity::warn,
       "CUDA cannot use this GPU, so it took no part in the NCCL collectives: it is unverified.",
       "Fix why CUDA cannot see the GPU (inventory reports it: CUDA_VISIBLE_DEVICES, Xid "
       "errors, a GPU lost to the driver), then rerun."},
      {"RDMA_UNAVAILABLE", Severity::fail,
       "RDMA NICs are expected (--expect-rnics) but libibverbs could not be loaded or could not "
       "list devices.",
       "Install rdma-core (libibverbs1 and the provider, e.g. ibverbs-providers) and check that "
       "the NIC driver (mlx5_core, mlx5_ib) is loaded: `ibv_devices`, `lsmod | grep mlx5`."},
      {"RDMA_NO_DEVICE", Severity::fail,
       "RDMA NICs are expected (--expect-rnics) but the node has none.",
       "Check `ibv_devices` and `lspci | grep -i mellanox`; load the NIC driver (mlx5_core, "
       "mlx5_ib) or reseat or replace the NIC."},
      {"RDMA_DEVICE_MISSING", Severity::fail,
       "--rdma-devices names an RDMA device this node does not have (a NIC whose driver did not "
       "load, that fell off the bus, or a wrong list).",
       "Compare `ibv_devices` and `lspci | grep -i mellanox` with the list; reload the NIC driver "
       "or service the NIC, or correct --rdma-devices."},
      {"RDMA_NIC_NOT_COMPUTE", Severity::info,
       "An RDMA device that is not part of the compute fabric (storage, in-band management): it is "
       "reported, but its ports are not judged and it takes no part in the transfers.",
       "None needed. If it is a compute NIC, name the compute NICs with --rdma-devices "
       "(docs/checks/rdma.md)."},
      {"RDMA_COUNT_MISMATCH", Severity::fail,
       "The node has a different number of usable RDMA ports (active, link up) than --expect-rnics "
       "says.",
       "Compare `ibstat` (or `ibv_devinfo`) with the node's expected NIC count; bring down ports "
       "up (cabling, switch port, subnet manager) or fix the expectation."},
      {"RDMA_DEVICE_ERROR", Severity::fail, "An RDMA device could not be opened or queried.",
       "Check `dmesg` for mlx5 errors and `ibv_devinfo -d NAME`; reload the driver or reset the "
       "NIC; RMA it if it repeats."},
      {"RDMA_PORT_DOWN", Severity::fail, "An RDMA port is not ACTIVE with its physical link up.",
       "Check the cable and the switch port (`ibstat`, `ibportstate`, or the Ethernet switch); on "
       "InfiniBand make sure a subnet manager runs; reseat or replace the cable or transceiver."},
      {"RDMA_PORT_SLOW", Severity::fail,
       "An RDMA port trained to a lower rate than the node's minimum (rdma.min_port_gbps).",
       "Check the cable and transceiver type and the switch port speed (`ibstat` Rate, `ethtool`); "
       "replace a degraded cable; correct rdma.min_port_gbps if the fabric is slower by design."},
      {"RDMA_NO_GID", Severity::fail,
       "A RoCE (Ethernet) port has no usable RoCE v2 GID: no IP address on its network interface.",
       "Configure the IP address of the NIC's network interface (`ip addr`, `show_gids`), then "
       "rerun."},
      {"RDMA_RATE_UNKNOWN", Severity::warn,
       "The rate of an active RDMA port could not be decoded from its speed and width, so it was "
       "not judged.",
       "Check `ibstat`; update rdma-core and the NIC firmware if the speed is new."},
      {"RDMA_PCIE_DEGRADED", Severity::fail,
       "The NIC's PCIe link is below what the NIC and slot can do, or carries less than the port's "
       "rate: the NIC cannot be fed at line rate.",
       "Check `lspci -vv` LnkSta against LnkCap for the NIC; reseat the NIC, check its riser and "
       "the slot's BIOS settings."},
      {"RDMA_CONNECT_FAILED", Severity::fail,
       "Two RDMA queue pairs could not be connected (queue-pair transition or address error), so "
       "the ports cannot talk over the fabric.",
       "Check both ports and the fabric between them (subnet manager, routing, RoCE VLAN/PFC "
       "configuration); the message names the failing verbs call."},
      {"RDMA_TRANSFER_ERROR", Severity::fail,
       "An RDMA transfer failed with a completion or verbs error (e.g. retry counter exceeded).",
       "Check cables, switch ports and error counters (`perfquery`, `ethtool -S`); the verbs "
       "status in the message says what failed."},
      {"RDMA_TIMEOUT", Severity::fail,
       "An RDMA call or transfer did not complete before the check's deadline.",
       "Check `dmesg` for NIC errors and the fabric; reset the NIC or reboot the node."},
      {"RDMA_DATA_MISMATCH", Severity::fail, "Bytes written over RDMA arrived changed.",
       "Drain the node; check NIC and PCIe error counters (`dmesg` AER, `ethtool -S`); rerun; "
       "replace the NIC or cable on the path named."},
      {"RDMA_BANDWIDTH_LOW", Severity::fail,
       "An RDMA transfer (loopback, NIC pair or GPUDirect) reached less than the failure share of "
       "the port rate.",
       "Check port rates and error counters on both ends, PCIe links (`lspci -vv`) and NUMA "
       "placement; compare with perftest `ib_write_bw` (docs/checks/rdma.md)."},
      {"RDMA_BANDWIDTH_MARGINAL", Severity::warn,
       "An RDMA transfer reached less than the warning share of the port rate.",
       "Check error counters and congestion settings; compare with perftest `ib_write_bw` "
       "(docs/checks/rdma.md)."},
      {"RDMA_GPUDIRECT_UNAVAILABLE", Severity::warn,
       "GPU memory could not be registered with the NIC (neither dma-buf nor peer memory), so "
       "GPUDirect RDMA does not work and NCCL would bounce through host memory.",
       "Load nvidia-peermem or use a kernel and driver with dma-buf support (Linux 5.12+, NVIDIA "
       "open kernel modules); check `lsmod | grep nvidia_peermem`."},
      {"FAULT_TARGET_MISSING", Severity::fail,
       "An injected fault names a device this node does not have (e.g. a NIC), so the drill could "
       "not test anything.",
       "Name a device the node has (`ibv_devices` for NICs) in --inject-fault."},
  };
  return entries;
}

}  // namespace preflight
