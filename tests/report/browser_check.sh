#!/usr/bin/env bash
# Loads an HTML page in headless Chromium (Debian's chromium package) and fails on anything a
# reader would notice: a script error, a console message, a Content-Security-Policy violation,
# a failed load, the page not marking itself rendered, expected text missing or rejected text
# present in the rendered DOM.
#
#   browser_check.sh PAGE.html [--no-script] [--screenshot PNG] [--save-dom PATH]
#                    [--expect TEXT]... [--reject TEXT]...
#
# --no-script loads the page as a browser with JavaScript off would show it: the content must be
# there all the same, and the rendered marker must not be. Headless Chromium dumps nothing with
# scripts disabled (--blink-settings=scriptEnabled=false), and --disable-javascript does not stop
# page scripts, so the page is loaded from a copy with its inline <script> elements removed. --expect and --reject match
# fixed strings in the DOM as Chromium serializes it (text escaped as &lt; &gt; &amp;), with the
# page's <wbr> break hints removed.
# Exit 0 when all is well, 1 with the reasons otherwise. There is no skip: a machine without
# /usr/bin/chromium fails, because a report that was never rendered is not tested.
set -uo pipefail

# REPORT_TEST_CHROMIUM only lets the tests prove that a missing browser fails (report: checker).
chromium=${REPORT_TEST_CHROMIUM:-/usr/bin/chromium}
page=""
screenshot=""
save_dom=""
script_on=1
expects=()
rejects=()
while (($#)); do
  case "$1" in
    --no-script) script_on=0 ;;
    --screenshot) screenshot=$2; shift ;;
    --save-dom) save_dom=$2; shift ;;
    --expect) expects+=("$2"); shift ;;
    --reject) rejects+=("$2"); shift ;;
    -*) echo "browser_check: unknown option $1" >&2; exit 2 ;;
    *) page=$1 ;;
  esac
  shift
done
[[ -n "$page" && -f "$page" ]] || { echo "browser_check: no page '$page'" >&2; exit 2; }

if [[ ! -x "$chromium" ]]; then
  echo "FAIL: $chromium not found. The report tests render the page in headless Chromium;" \
    "install it with: apt-get install -y chromium" >&2
  exit 1
fi

profile=$(mktemp -d /tmp/preflight-chromium.XXXXXX)
out=$(mktemp -d /tmp/preflight-browser.XXXXXX)
trap 'rm -rf "$profile" "$out"' EXIT
url="file://$(realpath "$page")"
if ((!script_on)); then
  sed 's|<script>.*</script>||g' "$page" >"$out/no-script.html"
  grep -q '<script' "$out/no-script.html" && { echo "browser_check: a script is left" >&2; exit 1; }
  url="file://$out/no-script.html"
fi

# Root needs --no-sandbox; the rest keeps the browser from reaching out (updates, sync,
# QUIC probes) so that any network activity in the log comes from the page.
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile" --enable-logging=stderr --v=0)

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Console messages (errors and console.log alike), uncaught exceptions, CSP violations and
# failed loads (net::ERR_...) are all findings: the page has no reason to produce any.
check_log() {
  local log=$1 what=$2 bad
  bad=$(grep -E 'CONSOLE|Uncaught|Content Security Policy|Content-Security-Policy|Refused to|ERR_' "$log")
  if [[ -n "$bad" ]]; then
    fail "$what: the browser reported errors:"
    printf '  %s\n' "$bad" >&2
  fi
}

# A hard timeout around every browser call: a hung browser must fail the test, not hang ctest.
timeout -k 5 60 "$chromium" "${flags[@]}" --dump-dom "$url" >"$out/dom.html" 2>"$out/dom.log"
rc=$?
if ((rc != 0)); then
  fail "chromium --dump-dom exited $rc (124: timed out)"
  tail -n 20 "$out/dom.log" >&2
fi
check_log "$out/dom.log" "loading $page"

dom="$out/dom.html"
# <wbr> break hints sit inside long runs of text; the checks read the text without them.
sed -i 's/<wbr>//g' "$dom"
if ((script_on)); then
  grep -q '<body[^>]*data-rendered="yes"' "$dom" || fail "the page did not mark itself rendered (data-rendered=\"yes\" on <body>): did its script run?"
else
  grep -q 'data-rendered=' "$dom" && fail "the page was loaded without its script, yet it is marked rendered"
fi
for text in "${expects[@]+"${expects[@]}"}"; do
  grep -qF -- "$text" "$dom" || fail "expected in the rendered page: $text"
done
for text in "${rejects[@]+"${rejects[@]}"}"; do
  grep -qF -- "$text" "$dom" && fail "must not be in the rendered page: $text"
done

if [[ -n "$screenshot" ]]; then
  rm -f "$screenshot"
  timeout -k 5 60 "$chromium" "${flags[@]}" --hide-scrollbars --window-size=1400,3000 \
    --screenshot="$screenshot" "$url" >"$out/shot.out" 2>"$out/shot.log"
  rc=$?
  ((rc == 0)) || fail "chromium --screenshot exited $rc (124: timed out)"
  check_log "$out/shot.log" "screenshot of $page"
  if [[ ! -s "$screenshot" ]] || [[ "$(head -c 4 "$screenshot" | od -An -c | tr -d ' ')" != '211PNG' ]]; then
    fail "no PNG screenshot at $screenshot"
  fi
fi

[[ -n "$save_dom" ]] && cp "$dom" "$save_dom"
if ((failures > 0)); then
  kept="$(dirname "$page")/$(basename "$page" .html).dom.html"
  cp "$dom" "$kept" 2>/dev/null && echo "browser_check: the rendered DOM is kept at $kept" >&2
  echo "browser_check: $page: $failures problem(s)" >&2
  exit 1
fi
echo "browser_check: $page: rendered, no console message, no CSP violation, no failed load"
