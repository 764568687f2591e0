#!/usr/bin/env bash
# One-off probe of what the hardware reports on the lent GPU machine (issue 27/28 research).
# shellcheck disable=SC2016  # the single-quoted scripts are for sh -c to expand
# Bounded: every command under timeout; writes into $1/probe-$2/.
set -u
out=$1/probe-$2; mkdir -p "$out"
t() { local f=$1; shift; { echo "\$ $*"; timeout -k 2 15 "$@" 2>&1; echo "rc=$?"; } >>"$out/$f.txt"; }
t smi nvidia-smi -q
t smi-d nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER,PERFORMANCE,CLOCK,POWER,TEMPERATURE
t smi-nvlink nvidia-smi nvlink -s
t smi-nvlink nvidia-smi nvlink -e
t smi-topo nvidia-smi topo -m
t kmsg ls -la /dev/kmsg /proc/kmsg
t kmsg sh -c 'dd if=/dev/kmsg iflag=nonblock bs=8192 count=4000 2>/dev/null | tail -n 400'
t kmsg sh -c 'dmesg 2>&1 | tail -n 300'
t kmsg sh -c 'command -v journalctl; ls /var/log | head -50'
t sys sh -c 'ls /sys/devices/system/edac /sys/devices/system/machinecheck 2>&1; ls /sys/bus/pci/devices 2>&1 | head -40; ls /sys/class/infiniband /sys/class/net 2>&1'
t sys sh -c 'for f in /sys/bus/pci/devices/*/aer_dev_*; do echo "== $f"; cat "$f"; done 2>&1 | head -120'
t sys sh -c 'for d in /sys/bus/pci/devices/*; do printf "%s %s %s %s %s\n" "${d##*/}" "$(cat $d/vendor)" "$(cat $d/class)" "$(cat $d/current_link_speed 2>/dev/null)" "$(cat $d/current_link_width 2>/dev/null)"; done 2>&1 | head -60'
t dmi sh -c 'for f in /sys/class/dmi/id/*; do [ -f "$f" ] && printf "%s=%s\n" "${f##*/}" "$(head -c 200 "$f" 2>&1)"; done'
t virt sh -c 'grep -m1 -o hypervisor /proc/cpuinfo; cat /proc/cmdline; uname -a; cat /etc/os-release | head -3; ls -la /.dockerenv /run/.containerenv 2>&1; cat /proc/1/cgroup | head'
timeout -k 2 60 python3 - "$out" <<'PY' >"$out/nvml.txt" 2>&1
import sys
try:
    import pynvml as n
except Exception as e:
    print("no pynvml:", e); sys.exit(0)
n.nvmlInit()
print("driver", n.nvmlSystemGetDriverVersion(), "nvml", n.nvmlSystemGetNVMLVersion())
def tr(label, f, *a):
    try: print(label, "=", f(*a))
    except Exception as e: print(label, "ERR", type(e).__name__, e)
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    tr("name", n.nvmlDeviceGetName, h)
    tr("pci", lambda h: n.nvmlDeviceGetPciInfo(h).busId, h)
    tr("pcie_replay", n.nvmlDeviceGetPcieReplayCounter, h)
    for et in (0, 1):
        for ct in (0, 1):
            tr(f"total_ecc err{et} cnt{ct}", n.nvmlDeviceGetTotalEccErrors, h, et, ct)
    tr("retired sbe", n.nvmlDeviceGetRetiredPages, h, 1)
    tr("retired dbe", n.nvmlDeviceGetRetiredPages, h, 2)
    tr("remapped rows", n.nvmlDeviceGetRemappedRows, h)
    tr("throttle", n.nvmlDeviceGetCurrentClocksEventReasons, h)
    ids = {}
    for name in dir(n):
        if name.startswith("NVML_FI_DEV_"):
            v = getattr(n, name)
            if isinstance(v, int): ids.setdefault(v, name)
    want = [k for k, v in ids.items() if any(s in v for s in ("PCIE", "ECC", "NVLINK_CRC", "NVLINK_REPLAY", "NVLINK_RECOVERY", "NVLINK_ECC", "RECOVERY", "XID", "REMAP", "RETIRED", "ERROR", "NVLINK_LINK_COUNT", "SPEED"))]
    for fid in sorted(want):
        try:
            r = n.nvmlDeviceGetFieldValues(h, [fid])[0]
            val = r.value
            v = {0: val.dVal, 1: val.uiVal, 2: val.ulVal, 3: val.ullVal, 4: val.sllVal, 5: val.siVal}.get(r.valueType, "?")
            print("field", fid, ids[fid], "ret", r.nvmlReturn, "type", r.valueType, "value", v)
        except Exception as e:
            print("field", fid, ids[fid], "ERR", e)
    for fid in (271,):  # GPU recovery action in newer drivers
        try:
            r = n.nvmlDeviceGetFieldValues(h, [fid])[0]
            print("field", fid, "raw ret", r.nvmlReturn, "type", r.valueType, "ui", r.value.uiVal)
        except Exception as e:
            print("field", fid, "ERR", e)
PY
