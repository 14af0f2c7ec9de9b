# Sourced by scripts/lab, scripts/build-image and scripts/build-kernel:
# Debian's stock kernel and its source, as the metapackages point at them.

. "$(dirname "${BASH_SOURCE[0]}")/cache-lock.sh"

# Prints the versioned package a Debian metapackage depends on
# (linux-image-amd64 -> linux-image-6.1.0-NN-amd64, linux-source ->
# linux-source-6.1), refreshing apt's lists once if it knows none.
#
# usage: debian_dependency META PREFIX
debian_dependency() {
  local meta=$1 prefix=$2 dep
  pick() { apt-cache depends "$meta" 2>/dev/null | awk -v re="Depends: $prefix[0-9]" '$0 ~ re {print $2; exit}'; }
  dep=$(pick)
  if [ -z "$dep" ]; then
    apt-get update -qq >/dev/null 2>&1 || true
    dep=$(pick)
  fi
  [ -n "$dep" ] || { echo "kernel: apt-cache knows no $prefix* for $meta (run apt-get update)" >&2; return 2; }
  echo "$dep"
}

# Debian's stock kernel, its .deb unpacked once into CACHE/kernel. Sets
# kver, kernel_root, vmlinuz and kernel_package (name and version of the
# .deb).
#
# usage: debian_kernel CACHE
debian_kernel() {
  local cache=$1
  kernel_root="$cache/kernel"
  kernel_unfilled() { [ ! -f "$kernel_root/ready" ] || [ ! -f "$kernel_root/package-version" ]; }
  if kernel_unfilled; then
    cache_locked "$cache" kernel debian_kernel_fill "$cache" || return
  fi
  kver=$(cat "$kernel_root/ready")
  vmlinuz="$kernel_root/boot/vmlinuz-$kver"
  kernel_package=$(cat "$kernel_root/package-version")
}

# Fills CACHE/kernel unless another run did while this one waited for the
# lock; "ready" is written last, once every step has worked (callers run
# it under `|| exit`, where set -e is off).
debian_kernel_fill() {
  local cache=$1 meta=linux-image-amd64 dep kv
  kernel_unfilled || return 0
  echo "kernel: fetching Debian's $meta into $cache" >&2
  rm -rf "$kernel_root" "$cache/debs"
  mkdir -p "$cache/debs" "$kernel_root" || return 2
  dep=$(debian_dependency "$meta" linux-image-) || return 2
  (cd "$cache/debs" && apt-get download "$dep" >/dev/null 2>&1) \
    || { echo "kernel: apt-get download $dep failed" >&2; return 2; }
  dpkg-deb -x "$cache"/debs/linux-image-*.deb "$kernel_root" \
    || { echo "kernel: unpacking $dep failed" >&2; return 2; }
  dpkg-deb --show --showformat='${Package} ${Version}\n' "$cache"/debs/linux-image-*.deb \
    > "$kernel_root/package-version" || return 2
  rm -rf "$cache/debs"
  kv=$(ls "$kernel_root/lib/modules") && [ -n "$kv" ] \
    || { echo "kernel: $dep holds no modules" >&2; return 2; }
  depmod -b "$kernel_root" "$kv" || { echo "kernel: depmod $kv failed" >&2; return 2; }
  echo "$kv" > "$kernel_root/ready"
}

# Prints the .ko files MODULES... need, dependencies first, each once.
module_closure() {
  local m
  for m in "$@"; do
    modprobe -d "$kernel_root" -S "$kver" --show-depends "$m" 2>/dev/null \
      | awk '$1 == "insmod" {print $2}' | grep . \
      || { echo "kernel: module $m is not in $kver" >&2; return 2; }
  done | awk '!seen[$0]++'
}
