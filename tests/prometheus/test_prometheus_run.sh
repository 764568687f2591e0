#!/usr/bin/env bash
# `preflight run --prom` for real: a healthy run without GPUs, and (with the fake NVML, in a
# CUDA build) two GPUs with an injected ECC fault; each file parsed back by the Prometheus
# client library and checked against the verdict of the same run (check_prometheus.py).
set -euo pipefail
preflight=$1
fake_nvml=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# No GPU, no driver: the same on any machine. A missing --prom directory is bad input, exit 2
# exactly: "not 0" would also pass a sanitizer's exit (86) and leave its report unexplained.
status=0
PREFLIGHT_NVML_LIBRARY=/nonexistent CUDA_VISIBLE_DEVICES='' \
  "$preflight" run --expect-gpus 0 --json "$work/v.json" --prom "$work/m/node.prom" >/dev/null 2>&1 ||
  status=$?
[[ $status -eq 2 ]] || { echo "a missing --prom directory must be refused with exit 2, got $status"; exit 1; }
[[ ! -e "$work/v.json" ]] || { echo "a refused run wrote a verdict"; exit 1; }

mkdir -p "$work/textfile"
PREFLIGHT_NVML_LIBRARY=/nonexistent CUDA_VISIBLE_DEVICES='' \
  "$preflight" run --expect-gpus 0 --json "$work/v.json" --prom "$work/textfile/node.prom" >/dev/null
/usr/bin/python3 "$here/check_prometheus.py" "$work/textfile/node.prom" "$work/v.json" \
  'preflight_verdict{verdict=pass}=1' 'preflight_action{action=none}=1' 'preflight_gpus=0' \
  '!preflight_burnin_passes'

# A burn-in's file says how many passes ran.
PREFLIGHT_NVML_LIBRARY=/nonexistent CUDA_VISIBLE_DEVICES='' \
  "$preflight" run --checks inventory --expect-gpus 0 --repeat 2 --json "$work/v.json" \
  --prom "$work/textfile/node.prom" >/dev/null 2>&1
/usr/bin/python3 "$here/check_prometheus.py" "$work/textfile/node.prom" "$work/v.json" \
  'preflight_burnin_passes=2' 'preflight_burnin_failed_passes=0'

if [[ -n "$fake_nvml" ]]; then
  printf 'gpus=2\ngpu1.temperature=47\n' >"$work/node.conf"
  status=0
  PREFLIGHT_NVML_LIBRARY=$fake_nvml FAKE_NVML_CONFIG=$work/node.conf CUDA_VISIBLE_DEVICES='' \
    NVIDIA_VISIBLE_DEVICES=none "$preflight" run --checks inventory \
    --inject-fault ecc-uncorrectable:2@gpu=1 --json "$work/v.json" \
    --prom "$work/textfile/node.prom" >/dev/null || status=$?
  [[ $status -eq 1 ]] || { echo "the injected ECC fault must exit 1, got $status"; exit 1; }
  /usr/bin/python3 "$here/check_prometheus.py" "$work/textfile/node.prom" "$work/v.json" \
    'preflight_verdict{verdict=fail}=1' 'preflight_injected=1' 'preflight_gpus=2' \
    'preflight_action{action=none}=0' \
    'preflight_gpu_temperature_celsius{gpu=1}=47' \
    'preflight_gpu_ecc_uncorrected_volatile_errors{gpu=1}=2' \
    'preflight_gpu_ecc_uncorrected_volatile_errors{gpu=0}=0' \
    'preflight_finding{check=inventory,code=ECC_UNCORRECTABLE_VOLATILE,entity=gpu1,severity=fail,injected=true}=1'
fi
echo "prometheus run: ok"
