#!/usr/bin/env bash
# What recording convergence curves costs: the same run at HEAD and at a commit before the curves
# (default 23cfc5c), interleaved, REPEATS times each; prints each wall time and the ratio of the means.
#   bash benchmarks/convergence_overhead.sh [OLD_COMMIT] [REPEATS]
set -euo pipefail
old=${1:-23cfc5c}
repeats=${2:-2}
here=$(git rev-parse --show-toplevel)
tree=$(mktemp -d)/old
git -C "$here" worktree add -q "$tree" "$old"
trap 'git -C "$here" worktree remove --force "$tree"' EXIT
declare -A total=([head]=0 [old]=0)
for i in $(seq "$repeats"); do
  for which in head old; do
    src=$here; [ "$which" = old ] && src=$tree
    store=$(mktemp -d)
    start=$(date +%s.%N)
    (cd "$src" && PYTHONPATH="$src" "$here/.venv/bin/python" -m robeval run -m digits-deit -m digits-deit-elliptical \
        --attacks pgd,spsa,apgd-ce,square -n 100 --store "$store/s.sqlite" --out "$store/out" --quiet >/dev/null)
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    total[$which]=$(echo "${total[$which]} + $seconds" | bc)
    echo "$which repeat $i: $seconds s"
  done
done
echo "HEAD / $old: $(echo "scale=2; ${total[head]} / ${total[old]}" | bc)x"
