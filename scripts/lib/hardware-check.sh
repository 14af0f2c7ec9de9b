# Sourced by scripts/build-image (and tests/boot.rs): checks the hardware
# table (image/hardware.tsv) against a module tree.

# Every row of TABLE must be bound, by modules.alias under ROOT for kernel
# KVER, to the row's driver, and that driver must name no firmware listed
# in MISSING ("module:file ..."). Prints the counts; on a row that fails,
# names each such row and what it lacks, and returns 2.
#
# usage: hardware_check ROOT KVER TABLE MISSING
hardware_check() {
  local root=$1 kver=$2 table=$3 missing=$4
  local rows=0 bad= drivers= id sub class driver name where ven dev sven sdev alias bound m n=0
  while IFS=$'\t' read -r id sub class driver name where; do
    n=$(( n + 1 ))
    case "$id" in ''|'#'*) continue ;; esac
    rows=$(( rows + 1 ))
    if [ -z "$where" ] || ! [[ "$id" =~ ^[0-9a-f]{4}:[0-9a-f]{4}$ && "$class" =~ ^[0-9a-f]{6}$ ]] \
       || ! [[ "$sub" = - || "$sub" =~ ^[0-9a-f]{4}:[0-9a-f]{4}$ ]]; then
      bad="$bad\n  line $n: not vendor:device, subsystem, class, driver, name, servers"
      continue
    fi
    [ "$sub" = - ] && sub=0000:0000
    ven=${id%%:*} dev=${id#*:} sven=${sub%%:*} sdev=${sub#*:}
    # As the kernel writes a modalias: hex in capitals, the class too.
    class=${class^^}
    alias=$(printf 'pci:v0000%sd0000%ssv0000%ssd0000%sbc%ssc%si%s' "${ven^^}" "${dev^^}" \
      "${sven^^}" "${sdev^^}" "${class:0:2}" "${class:2:2}" "${class:4:2}")
    bound=$(modprobe -d "$root" -S "$kver" -R "$alias" 2>/dev/null | paste -sd' ' -)
    # shellcheck disable=SC2086 # one module per word
    if ! printf '%s\n' $bound | grep -qx "$driver"; then
      bad="$bad\n  line $n: $id ($name): no module of the image binds it as $driver (bound: ${bound:-none})"
    fi
    for m in $missing; do
      [ "${m%%:*}" = "$driver" ] && bad="$bad\n  line $n: $id ($name): $driver names firmware ${m#*:}, not in the image"
    done
    drivers="$drivers$driver\n"
  done < "$table"
  if [ -n "$bad" ]; then
    printf 'hardware table %s: rows the image cannot drive:%b\n' "$table" "$bad" >&2
    return 2
  fi
  echo "hardware table: $rows rows, $(printf '%b' "$drivers" | sort -u | grep -c .) drivers, every row bound"
}
