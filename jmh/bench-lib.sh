# Shared by jmh/run-issue*.sh (sourced, not run): a section header with the time, load and commit, and a command
# echoed before it runs, so that the saved output says what produced each number.

section() {
  echo
  echo "=== $1"
  echo "    $(date -u +%T) UTC, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
}

run() {
  echo "\$ $*"
  "$@"
}
