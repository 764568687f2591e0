#!/usr/bin/env bash
# What a failed download means, from curl's own exit status (curl(1), "EXIT CODES"), for
# scripts/setup-deps.sh: a certificate that cannot be verified, a proxy, a name that does not
# resolve and a file that is gone each need a different fix, and one message for all of them sent
# people to the wrong one (issue 31: a TLS failure read "a pinned file that left the archive").
#
# Sourced: defines download_cause only. Run directly, it is the test hook:
#   download.sh cause CURL_STATUS CURL_MESSAGE   # prints the cause line

# download_cause STATUS MESSAGE: one line, the cause and what to do about it.
download_cause() {
  local status=$1 message=$2
  case $status in
    22)
      if [[ $message == *" 404"* || $message == *" 410"* ]]; then
        printf 'not found on the server (%s): the pinned file has left the archive; point PREFLIGHT_DEBIAN_MIRROR or PREFLIGHT_PYPI_FILES at a copy that keeps it, e.g. snapshot.debian.org (docs/install.md)\n' "$message"
      else
        printf 'the server refused the request (%s)\n' "$message"
      fi
      ;;
    35 | 51 | 53 | 54 | 58 | 59 | 60 | 66 | 77 | 80 | 82 | 83 | 90 | 91 | 98)
      printf 'TLS failed (curl error %s: %s): the server certificate could not be verified or the TLS handshake failed; check that ca-certificates is installed and the clock is right, and behind a TLS-inspecting proxy give its CA with CURL_CA_BUNDLE\n' "$status" "$message"
      ;;
    5 | 97)
      printf 'the proxy failed (curl error %s: %s): check https_proxy / HTTPS_PROXY\n' "$status" "$message"
      ;;
    6)
      printf 'the host name does not resolve (curl error 6: %s): no DNS or no network; behind a proxy set https_proxy\n' "$message"
      ;;
    7 | 28 | 56)
      printf 'no connection (curl error %s: %s): the host cannot be reached from here; behind a proxy set https_proxy\n' "$status" "$message"
      ;;
    *)
      printf 'curl error %s: %s\n' "$status" "$message"
      ;;
  esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  if [[ ${1:-} == cause && $# -eq 3 ]]; then
    download_cause "$2" "$3"
  else
    echo "usage: download.sh cause CURL_STATUS CURL_MESSAGE" >&2
    exit 2
  fi
fi
