#!/usr/bin/env bash
# Side-by-side CPU time of whole processes: every command runs once per round, the rounds
# alternate, and each command's median task-clock (perf stat: user + system CPU of the process),
# its lower quartile, its least (which neighbours' noise can only raise) and its peak RSS (GNU
# time, first round) are printed. For comparisons on a shared machine, where wall-clock times
# swing: the ratios between the commands are the measure. On a virtual machine whose host takes
# its CPUs away in bursts, every figure moves with the bursts; compare runs of one call only.
#
#   benches/task-clock.sh ROUNDS INPUT -- LABEL COMMAND... [-- LABEL COMMAND...]...
#   benches/task-clock.sh 41 /tmp/sylva.yaml -- floor target/release/cutover-identity --events \
#       -- cutover target/release/cutover
#
# Each command reads INPUT on stdin; its stdout and stderr are discarded. Needs perf and
# /usr/bin/time.
set -euo pipefail
if (($# < 4)) || [[ $3 != -- ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
rounds=$1 input=$2
shift 2
labels=() cmds=()
while (($#)); do
  shift # --
  labels+=("$1")
  shift
  cmd=""
  while (($#)) && [[ $1 != -- ]]; do
    cmd+="$1 "
    shift
  done
  cmds+=("$cmd")
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for r in $(seq "$rounds"); do
  for i in "${!labels[@]}"; do
    # shellcheck disable=SC2086 # a command line, split as the shell splits it
    perf stat -x, -e task-clock -o "$dir/stat" -- ${cmds[$i]} <"$input" >/dev/null 2>&1 || true
    grep task-clock "$dir/stat" | cut -d, -f1 >>"$dir/ms.$i"
    if ((r == 1)); then
      # shellcheck disable=SC2086
      /usr/bin/time -f %M -o "$dir/rss.$i" ${cmds[$i]} <"$input" >/dev/null 2>&1 || true
    fi
  done
done
for i in "${!labels[@]}"; do
  median=$(sort -n "$dir/ms.$i" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
  quartile=$(sort -n "$dir/ms.$i" | awk '{a[NR] = $1} END {print a[int((NR + 3) / 4)]}')
  least=$(sort -n "$dir/ms.$i" | head -n 1)
  printf '%-14s median %9.2f ms CPU   q1 %9.2f ms   min %9.2f ms   peak RSS %7d KiB\n' \
    "${labels[$i]}" "$median" "$quartile" "$least" "$(tail -n 1 "$dir/rss.$i")"
done
