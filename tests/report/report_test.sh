#!/usr/bin/env bash
# The `preflight report` tests that run the binary and a browser as a user would (docs/report.md).
#
#   report_test.sh CASE PREFLIGHT_BINARY SOURCE_DIR WORK_DIR
#
# CASE: fixtures | hostile | real-verdict | no-script | checker | tsv | cli. Each case works in
# WORK_DIR (emptied first) and exits 0 on success, 1 with reasons on failure.
set -uo pipefail

case_name=$1
preflight=$2
source_dir=$3
work=$4
here="$source_dir/tests/report"
data="$here/data"
check="$here/browser_check.sh"

rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
finish() {
  if ((failures > 0)); then
    echo "report test '$case_name': $failures failure(s)" >&2
    exit 1
  fi
  echo "report test '$case_name': ok"
  exit 0
}

# Renders the given verdicts to report.html; the command must succeed.
render() {
  "$preflight" report "$@" --output report.html >render.out 2>render.err
  local rc=$?
  if ((rc != 0)) || [[ ! -s report.html ]]; then
    fail "preflight report $* exited $rc: $(cat render.err)"
    finish
  fi
}

# Static properties of the page as written, before any browser: charset, a CSP that forbids
# fetches, exactly one script, no external reference.
static_checks() {
  local page=$1
  grep -q '^<!DOCTYPE html>' "$page" || fail "$page: no <!DOCTYPE html>"
  grep -q '<meta charset="utf-8">' "$page" || fail "$page: no <meta charset=\"utf-8\">"
  grep -q "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'" "$page" ||
    fail "$page: no Content-Security-Policy with default-src 'none'"
  local scripts
  scripts=$(grep -o '<script' "$page" | wc -l)
  ((scripts == 1)) || fail "$page: $scripts <script> tags, expected exactly 1"
  grep -Eiq '(src|href)="(https?:)?//' "$page" && fail "$page: references an external URL"
}

case "$case_name" in
  fixtures)
    # The realistic node, the fleet and the burn-in run in one page, as an operator would
    # render a night's verdicts; the screenshot is for people to look at (kept in the build
    # tree, not in git).
    render "$data/node-8gpu-h100.json" "$data/fleet-6node.json" "$data/node-burnin.json"
    static_checks report.html
    "$check" report.html --screenshot "$work/../report-fixtures.png" \
      --expect '<h2>Summary</h2>' \
      --expect 'gpu-a017' --expect 'fleet of 6 nodes' --expect 'gpu-b104' \
      --expect 'NVLINK_BANDWIDTH_LOW' --expect 'GEMM_STRAGGLER' \
      --expect 'Drain until fixed.' \
      --expect 'node median 743.7 TFLOP/s' --expect 'unidirectional_gbps' \
      --expect 'peer_access' --expect 'bidirectional_gbps' \
      --expect 'first failed: pass 2' --expect 'Burn-in passes' \
      --expect 'gpu-a011,gpu-a013,gpu-a014' --expect 'rank 3 did not finish' \
      --expect 'Round 3' --expect 'NVIDIA H100 80GB HBM3' --expect '580.65.06' ||
      failures=$((failures + 1))
    ;;
  hostile)
    # Text from other machines must stay text: no element, attribute, script or style of its
    # own may reach the DOM, and the text itself must be shown as written.
    render "$data/hostile-node.json" "$data/hostile-fleet.json"
    static_checks report.html
    grep -q '<script>document' report.html && fail "raw hostile <script> in the page"
    grep -q '<img' report.html && fail "raw hostile <img> in the page"
    "$check" report.html --save-dom dom.html \
      --reject 'data-pwned' --reject '<h1 id="hostile-heading"' --reject '<img' \
      --reject '<link rel="stylesheet"' --reject 'onmouseover="' \
      --expect '&lt;script&gt;document.body.setAttribute(' \
      --expect 'Tom &amp; Jerry &amp;amp; &amp;lt;b&amp;gt;not bold' \
      --expect '&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;/section&gt;&lt;h1 id="hostile-heading"&gt;' \
      --expect '日本語' --expect 'class="drill"' --expect 'local-fail@node=4' ||
      failures=$((failures + 1))
    if [[ -f dom.html ]]; then
      n=$(grep -o '<script' dom.html | wc -l)
      ((n == 1)) || fail "the rendered DOM has $n <script> elements, expected 1"
      n=$(grep -o '<style' dom.html | wc -l)
      ((n == 1)) || fail "the rendered DOM has $n <style> elements, expected 1"
      n=$(grep -o '<h1' dom.html | wc -l)
      ((n == 1)) || fail "the rendered DOM has $n <h1> elements, expected 1"
    fi
    ;;
  real-verdict)
    # A verdict the binary itself wrote on this machine (no GPU, no NVML): whatever the run
    # concluded, its report must render.
    PREFLIGHT_NVML_LIBRARY=/nonexistent CUDA_VISIBLE_DEVICES= \
      timeout -k 5 120 "$preflight" run --expect-gpus 0 --json verdict.json >run.out 2>run.err
    rc=$?
    ((rc == 0 || rc == 1)) || fail "preflight run exited $rc: $(cat run.err)"
    [[ -s verdict.json ]] || { fail "preflight run wrote no verdict"; finish; }
    render verdict.json
    static_checks report.html
    host=$(sed -n 's/^  "host": "\(.*\)",$/\1/p' verdict.json)
    "$check" report.html --expect "$host" --expect 'inventory' --expect '<h2>Summary</h2>' ||
      failures=$((failures + 1))
    ;;
  no-script)
    # Readable with JavaScript off: the same content, only the rendered marker is missing.
    render "$data/node-8gpu-h100.json" "$data/fleet-6node.json"
    "$check" report.html --no-script \
      --expect 'gpu-a017' --expect 'NVLINK_BANDWIDTH_LOW' --expect 'unidirectional_gbps' \
      --expect 'gpu-a011,gpu-a013,gpu-a014' || failures=$((failures + 1))
    ;;
  checker)
    # The browser check must catch what it claims to: a console message, a script error, a
    # blocked fetch, a page that does not mark itself rendered. A check that passes everything
    # would make the other cases worthless.
    csp="<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'\">"
    head="<!DOCTYPE html><html><head><meta charset=\"utf-8\">$csp<title>t</title></head>"
    mark="<script>document.body.setAttribute('data-rendered','yes')</script>"
    printf '%s<body>ok%s</body></html>\n' "$head" "$mark" >good.html
    printf '%s<body>%s<script>console.error("oops")</script></body></html>\n' "$head" "$mark" >console.html
    printf '%s<body>%s<script>nosuchfunction()</script></body></html>\n' "$head" "$mark" >uncaught.html
    printf '%s<body>%s<img src="http://127.0.0.1:9/x.png" alt=""></body></html>\n' "$head" "$mark" >fetch.html
    printf '%s<body>no marker</body></html>\n' "$head" >unmarked.html
    "$check" good.html --expect 'ok' || fail "the browser check failed a good page"
    "$check" good.html --expect 'not there' 2>/dev/null && fail "missing --expect text passed"
    for bad in console uncaught fetch unmarked; do
      "$check" "$bad.html" 2>"$bad.err" && fail "the browser check passed $bad.html"
    done
    grep -q 'Content Security Policy' fetch.err || fail "the blocked fetch was not reported as such"
    # No browser is a failure with a clear message, never a skip.
    REPORT_TEST_CHROMIUM=/nonexistent/chromium "$check" good.html 2>missing.err
    rc=$?
    ((rc == 1)) || fail "a missing chromium exited $rc, expected 1"
    grep -q 'apt-get install -y chromium' missing.err || fail "no install hint: $(cat missing.err)"
    ;;
  tsv)
    # --format tsv: the keys are exactly those docs/report.md lists, one value per line.
    "$preflight" report --format tsv "$data/node-8gpu-h100.json" "$data/fleet-6node.json" \
      "$data/hostile-fleet.json" >fields.tsv 2>tsv.err || fail "report --format tsv: $(cat tsv.err)"
    awk -F'\t' 'NF != 2 { exit 1 }' fields.tsv || fail "a tsv line is not key<TAB>value"
    sed -n '/^## Format tsv/,/^## /p' "$source_dir/docs/report.md" |
      sed -n 's/^| `\([a-z_]*\)` |.*/\1/p' | sort -u >documented.txt
    cut -f1 fields.tsv | sort -u >emitted.txt
    [[ -s documented.txt ]] || fail "docs/report.md has no tsv key table under '## Format tsv'"
    diff documented.txt emitted.txt >keys.diff ||
      fail "tsv keys differ from docs/report.md (< documented, > emitted): $(cat keys.diff)"
    grep -q $'^exclude\tgpu-a011,gpu-a013,gpu-a014$' fields.tsv || fail "fleet exclude line"
    grep -q $'^host\tgpu-a017$' fields.tsv || fail "node host line"
    ;;
  cli)
    # Problems with the input are found before anything is written: exit 2, no file.
    "$preflight" report "$data/no-such-file.json" --output out.html >/dev/null 2>err.txt
    rc=$?
    ((rc == 2)) || fail "a missing input file exited $rc, expected 2"
    [[ -e out.html ]] && fail "a failed report left out.html behind"
    "$preflight" report "$data/fleet-6node.json" --output "$work/no-such-dir/out.html" \
      >/dev/null 2>err.txt
    rc=$?
    ((rc == 2)) || fail "an --output in a missing directory exited $rc, expected 2"
    echo '{"schema": "something/9"}' >unknown.json
    "$preflight" report unknown.json --output out.html >/dev/null 2>err.txt
    rc=$?
    ((rc == 2)) || fail "an unknown schema exited $rc, expected 2"
    "$preflight" report "$data/fleet-6node.json" >stdout.html 2>err.txt ||
      fail "report to stdout: $(cat err.txt)"
    grep -q '</html>' stdout.html || fail "no page on stdout"
    ;;
  *)
    echo "report_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac
finish
