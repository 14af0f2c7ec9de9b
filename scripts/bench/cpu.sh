# Sourced by the bench scripts: measure_cpu OUT CMD... runs CMD and writes
# "CPU_SECONDS CONTEXT_SWITCHES" to OUT.
#
# Why perf: a kernel built with tick-based CPU accounting (the common
# CONFIG_TICK_CPU_ACCOUNTING) charges user/system time by sampling the
# task that is running when the tick fires, so getrusage (GNU time's %U %S)
# is biased for a workload that runs in short bursts between sleeps, which
# both ACT and storcert do; one 10 s ACT run here read "0.00 s system".
# perf's task-clock is the scheduler's exact run time. Without a working
# perf the figures fall back to GNU time, said once on stderr.
measure_cpu() {
  local out=$1; shift
  if [ -z "${cpu_clock:-}" ]; then
    if perf stat -x, -e task-clock -o /dev/null -- true >/dev/null 2>&1; then
      cpu_clock=perf
    else
      cpu_clock=rusage
      echo "note: perf unavailable, CPU figures are GNU time's tick-sampled rusage" >&2
    fi
  fi
  if [ "$cpu_clock" = perf ]; then
    local rc=0
    perf stat -x, -e task-clock,context-switches -o "$out.perf" -- "$@" || rc=$?
    awk -F, '$3 ~ /^task-clock/ {ms=$1} $3 ~ /^context-switches/ {cs=$1}
             END {printf "%.6f %d\n", ms / 1000, cs}' "$out.perf" > "$out"
    return $rc
  fi
  local rc=0
  /usr/bin/time -o "$out.time" -f "%U %S %c %w" "$@" || rc=$?
  # GNU time puts "Command exited with non-zero status N" first on failure.
  tail -n 1 "$out.time" | awk '{printf "%.6f %d\n", $1 + $2, $3 + $4}' > "$out"
  return $rc
}

# The whole machine's busy CPU seconds while CMD runs: elapsed time × CPUs
# minus idle and iowait from /proc/stat (kept exactly by a tickless
# kernel's idle entry and exit, unlike the tick-sampled user/system). It
# counts what a tool's requests cost outside its own threads too: the
# device driver's workers, interrupts, the virtual CPU's idle exits.
# measure_system OUT CMD... writes "BUSY_SECONDS" to OUT.
measure_system() {
  local out=$1; shift
  local idle0 idle1 t0 t1 rc=0
  idle0=$(awk '/^cpu /{print $5 + $6}' /proc/stat)
  t0=$(date +%s%N)
  "$@" || rc=$?
  t1=$(date +%s%N)
  idle1=$(awk '/^cpu /{print $5 + $6}' /proc/stat)
  awk -v t=$((t1 - t0)) -v n="$(nproc)" -v i=$((idle1 - idle0)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.3f\n", t / 1e9 * n - i / hz}' > "$out"
  return $rc
}
