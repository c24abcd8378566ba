#!/usr/bin/env bash
# The learning cycle before and after a change, side by side on a quiet many-core machine (a lent
# GPU machine's CPU), each pinned to two physical cores of its own so that each sees what a 2-core
# laptop sees (os.availableParallelism() follows the affinity: the trainer's wasm threads; the
# engine's threads come from CLAWRL_THREADS=2). Runs bench/learning-cycle.ts from .gpu/src-base.tar.xz
# (before) and .gpu/src.tar.xz (after) at the same time, and bench/trainer-real-size.ts
# (--recompute all vs plan, one run) on a third pair. Build .gpu/ first:
#
#   GPU_PACK_BASE_REF=<commit> bash scripts/gpu/pack.sh
#   bash scripts/gpu/cycle.sh          # on the device: OUT is set by the run tool
#
# CYCLE_ARGS: learning-cycle's flags (default: the 0.5B shape, q8_0, app defaults).
# CYCLE_BUDGET_S: the time the runs get (default 540 s); what they printed by then comes back.
set -u
START=$(date +%s)
BUDGET=${CYCLE_BUDGET_S:-540}
CYCLE_ARGS=${CYCLE_ARGS:---shape qwen2.5-0.5b --type q8_0}
REPO=$(pwd)
CARRY=$(cd "${GPU_CARRY:-.gpu}" && pwd) || { echo "no carry folder (.gpu): run scripts/gpu/pack.sh"; exit 2; }
OUT=${OUT:-/tmp/gpu-out}
W=${GPU_WORK:-/tmp/clawrl-cycle}
mkdir -p "$OUT" "$W/bin" "$W/before" "$W/after"
exec > >(tee "$OUT/cycle.log") 2>&1
elapsed() { echo $(( $(date +%s) - START )); }
step() { echo "== [$(elapsed) s] $*"; }

step "unpacking"
[ -x "$W/bin/node" ] || { xz -dc "$CARRY/node.xz" > "$W/bin/node" && chmod +x "$W/bin/node"; }
tar -xJf "$CARRY/src.tar.xz" -C "$W/after"
tar -xJf "$CARRY/src-base.tar.xz" -C "$W/before"
tar -xJf "$CARRY/nm.tar.xz" -C "$W/after"
ln -sfn "$W/after/node_modules" "$W/before/node_modules"
export PATH="$W/bin:$PATH"
echo "after: $(cat "$CARRY/src.commit")"; echo "before: $(cat "$CARRY/src-base.commit")"
nproc; lscpu | grep -E 'Model name|Thread|Core|Socket|MHz' | head -8

# First thread of each physical core, so two runs never share a core's execution units.
mapfile -t CORES < <(for c in /sys/devices/system/cpu/cpu[0-9]*; do s=$(cat "$c/topology/thread_siblings_list" 2>/dev/null) || continue; n=${c##*cpu}; [ "${s%%[,-]*}" = "$n" ] && echo "$n"; done | sort -n)
echo "physical cores (first threads): ${CORES[*]}"
pair() { echo "${CORES[$1]},${CORES[$(( $1 + 1 ))]}"; }

step "the shape model (generated once, shared)"
(cd "$W/after" && node --import tsx -e "import('./models/tiny/shapeCache.ts').then(m => console.log(m.ensureShapeModel('qwen2.5-0.5b', 'q8_0')))")
mkdir -p "$W/before/.cache" && ln -sfn "$W/after/.cache/models" "$W/before/.cache/models"

left=$(( BUDGET - $(elapsed) ))
step "learning-cycle before on cpus $(pair 0), after on cpus $(pair 2), trainer-real-size on $(pair 4) (limit ${left} s)"
export CLAWRL_THREADS=2
(cd "$W/before" && timeout -k 5 "$left" taskset -c "$(pair 0)" node --import tsx bench/learning-cycle.ts $CYCLE_ARGS > "$OUT/cycle-before.txt" 2>&1; echo "exit $?" >> "$OUT/cycle-before.txt") &
(cd "$W/after" && timeout -k 5 "$left" taskset -c "$(pair 2)" node --import tsx bench/learning-cycle.ts $CYCLE_ARGS > "$OUT/cycle-after.txt" 2>&1; echo "exit $?" >> "$OUT/cycle-after.txt") &
(cd "$W/after" && timeout -k 5 "$(( left / 2 ))" taskset -c "$(pair 4)" node --import tsx bench/trainer-real-size.ts --backend wasm --shapes qwen2.5-0.5b --configs 1x128 --steps 2 --recompute compare > "$OUT/trainer-step.txt" 2>&1; echo "exit $?" >> "$OUT/trainer-step.txt") &
wait
step "done"
for f in cycle-before cycle-after trainer-step; do echo "---- $f"; tail -25 "$OUT/$f.txt"; done
