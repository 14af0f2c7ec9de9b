# Sourced by scripts/build-image: Debian's non-free-firmware packages,
# unpacked once into a cache, fetched with an apt configuration of their
# own (the host's sources are not changed, whatever components they name).

# Unpacks PACKAGES... from bookworm's non-free-firmware into
# CACHE/firmware-KEY/root (KEY: the package list and their versions) and
# sets firmware_root to it.
#
# usage: debian_firmware CACHE PACKAGES...
debian_firmware() {
  # Its apt lists and packages are the cache's too: one run at a time.
  cache_locked "$1" firmware debian_firmware_held "$@"
}

debian_firmware_held() {
  local cache=$1; shift
  local apt="$cache/apt-non-free-firmware" uri src
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/parts"
  # The registry the host's own sources name, with non-free-firmware.
  uri=$(grep -hoE '^(URIs:|deb) +(\[[^]]*\] +)?[a-z]+://[^ ]+' \
          /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null \
        | grep -v security | head -1 | awk '{print $NF}')
  [ -n "$uri" ] || { echo "firmware: no Debian registry in this machine's apt sources" >&2; return 2; }
  src="$apt/non-free-firmware.sources"
  printf 'Types: deb\nURIs: %s\nSuites: bookworm\nComponents: non-free-firmware\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" > "$src"
  # Nothing of the host's apt state: not its installed packages (a newer
  # firmware package installed here is no candidate to download), not its
  # preferences.
  : > "$apt/status"
  mkdir -p "$apt/preferences.d"
  local opts=(-o "Dir::Etc::SourceList=$src" -o "Dir::Etc::SourceParts=$apt/parts"
              -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives"
              -o "Dir::State::status=$apt/status" -o "Dir::Etc::Preferences=$apt/preferences"
              -o "Dir::Etc::PreferencesParts=$apt/preferences.d"
              -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
  refresh() {
    apt-get -qq "${opts[@]}" update > /dev/null 2>&1 \
      || { echo "firmware: apt-get update (non-free-firmware) failed" >&2; return 2; }
  }
  # Lists older than a week are refreshed (a point release moves files).
  if [ -z "$(find "$apt/lists" -maxdepth 1 -name '*non-free-firmware*Packages*' -mtime -7 2>/dev/null)" ]; then
    refresh || return 2
  fi
  local versions key p
  versions=$(for p in "$@"; do
    apt-cache "${opts[@]}" policy "$p" 2>/dev/null | awk -v p="$p" '/Candidate:/ {print p, $2}'
  done)
  [ "$(printf '%s\n' "$versions" | grep -c .)" -eq $# ] \
    || { echo "firmware: not all of $* are in non-free-firmware" >&2; return 2; }
  key=$(printf '%s\n' "$versions" | sha256sum | cut -c1-16)
  firmware_root="$cache/firmware-$key/root"
  firmware_packages=$versions
  if [ ! -f "$cache/firmware-$key/ready" ]; then
    echo "firmware: fetching $* into $cache" >&2
    rm -rf "$cache"/firmware-[0-9a-f]*
    mkdir -p "$cache/firmware-$key/debs" "$firmware_root"
    # Called as `debian_firmware … || exit`, so set -e is off in here:
    # every step is checked, and "ready" is written only after all.
    (cd "$cache/firmware-$key/debs" && apt-get -qq "${opts[@]}" download "$@" > /dev/null 2>&1) \
      || { refresh && (cd "$cache/firmware-$key/debs" && apt-get -qq "${opts[@]}" download "$@" > /dev/null 2>&1); } \
      || { echo "firmware: apt-get download $* failed" >&2; return 2; }
    for deb in "$cache/firmware-$key/debs"/*.deb; do
      dpkg-deb -x "$deb" "$firmware_root" || { echo "firmware: unpacking $deb failed" >&2; return 2; }
    done
    rm -rf "$cache/firmware-$key/debs" || return 2
    touch "$cache/firmware-$key/ready" || return 2
  fi
  # Canonical, so a link resolved inside it compares equal.
  firmware_root=$(cd "$firmware_root" && pwd -P) || return 2
}
