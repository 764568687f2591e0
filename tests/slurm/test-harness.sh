# shellcheck shell=bash disable=SC2034  # common.sh reads what this file sets
# The Slurm hooks' test harness. scripts/slurm/common.sh sources this file only when it lies beside
# it, which only the tests arrange: tests/slurm/lib.sh and tests/slurm-real/lib.sh copy the hooks
# and this file into a scratch folder and run the copies. Neither the package nor the
# installation steps of docs/slurm.md put it there, and scripts/slurm/ has none, so on a node
# the PREFLIGHT_TEST_* variables below change nothing. It may change two settings, no more:
# - PREFLIGHT_TEST_DEFAULT_STATE_DIR replaces /var/lib/preflight, so that no test writes there;
# - PREFLIGHT_TEST_STUBS, an absolute folder of stand-ins (logger, timeout), goes before the
#   fixed search path.
if [[ ${PREFLIGHT_TEST_DEFAULT_STATE_DIR:-} == /* ]]; then
  PF_DEFAULT_STATE_DIR=$PREFLIGHT_TEST_DEFAULT_STATE_DIR
fi
if [[ ${PREFLIGHT_TEST_STUBS:-} == /* ]]; then
  PF_PATH=$PREFLIGHT_TEST_STUBS:$PF_PATH
fi
