# Sourced by scripts/lib/debian-kernel.sh (and so by scripts/lab,
# scripts/build-image and scripts/build-kernel): one lock per part of the
# lab cache.

# Holds CACHE/NAME.lock until cache_unlock. Two runs that fill the same
# part of the cache at once (two test runs, a lab beside an image build)
# take turns, and the second finds it filled. Only a fill holds it: runs
# that read a filled cache (the qemu tests' labs) go side by side.
#
# usage: cache_lock CACHE NAME ... cache_unlock
cache_lock() {
  mkdir -p "$1" || return 2
  exec {cache_lock_fd}>"$1/$2.lock" || return 2
  flock "$cache_lock_fd"
}

cache_unlock() {
  [ -n "${cache_lock_fd:-}" ] || return 0
  exec {cache_lock_fd}>&-
  unset cache_lock_fd
}

# Runs COMMAND... holding CACHE/NAME.lock, and returns its status.
#
# usage: cache_locked CACHE NAME COMMAND...
cache_locked() {
  local rc=0
  cache_lock "$1" "$2" || return 2
  shift 2
  "$@" || rc=$?
  cache_unlock
  return "$rc"
}
