# Sourced by the report's browser tests: `fail`, and `browse ARGS...`, which runs Debian's
# chromium (from tools/setup) headless, without a sandbox (tests may run as root) or a
# GPU, with a fresh profile and HOME under $dir, and under `timeout` so that a stuck
# browser can never hang the test. The test sets `dir` before sourcing this.
fail() { echo "FAIL: $*"; exit 1; }

chromium=$(command -v chromium || command -v chromium-browser) \
  || fail "chromium is not installed: run tools/setup (it installs Debian's chromium)"
export HOME="$dir/home"
mkdir -p "$HOME"
browse() {
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --no-first-run --user-data-dir="$dir/profile" --enable-logging=stderr --v=0 \
    --virtual-time-budget=5000 "$@"
}
