# Sourced by scripts/lab and scripts/build-image: Debian's stock kernel
# (the package linux-image-amd64 points at), its .deb unpacked once into
# CACHE/kernel. Sets kver, kernel_root, vmlinuz and kernel_package (name
# and version of the .deb).
#
# usage: debian_kernel CACHE
debian_kernel() {
  local cache=$1 meta=linux-image-amd64 dep
  kernel_root="$cache/kernel"
  if [ ! -f "$kernel_root/ready" ] || [ ! -f "$kernel_root/package" ]; then
    echo "kernel: fetching Debian's $meta into $cache" >&2
    rm -rf "$kernel_root" "$cache/debs"
    mkdir -p "$cache/debs" "$kernel_root"
    dep=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    if [ -z "$dep" ]; then
      apt-get update -qq >/dev/null 2>&1 || true
      dep=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    fi
    [ -n "$dep" ] || { echo "kernel: apt-cache knows no linux-image for $meta (run apt-get update)" >&2; return 2; }
    (cd "$cache/debs" && apt-get download "$dep" >/dev/null 2>&1) \
      || { echo "kernel: apt-get download $dep failed" >&2; return 2; }
    dpkg-deb -x "$cache"/debs/linux-image-*.deb "$kernel_root"
    dpkg-deb -f "$cache"/debs/linux-image-*.deb Package Version | paste -sd' ' - > "$kernel_root/package"
    rm -rf "$cache/debs"
    kver=$(ls "$kernel_root/lib/modules")
    depmod -b "$kernel_root" "$kver"
    echo "$kver" > "$kernel_root/ready"
  fi
  kver=$(cat "$kernel_root/ready")
  vmlinuz="$kernel_root/boot/vmlinuz-$kver"
  kernel_package=$(cat "$kernel_root/package")
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
