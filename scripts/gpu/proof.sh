#!/usr/bin/env bash
# Proves the app's GPU paths on a lent GPU machine (docs/hardware/h100.md), with the app's own
# code: `clawrl doctor --deep` (node-llama-cpp per backend: CUDA, Vulkan, CPU; the trainer's
# backends: WebGPU through Dawn, wasm, plain JS; a LoRA step on the best), then
# bench/trainer-real-size.ts on WebGPU and wasm. Run from the repository root after
# scripts/gpu/pack.sh built .gpu/:
#
#   bash scripts/gpu/proof.sh            # on the device: OUT is set by the run tool
#
# Everything comes from .gpu/: Node 20 (node.xz), the app at the packed commit (src.tar.xz),
# the pruned node_modules (nm.tar.xz) and Debian's Vulkan loader (debs/, unpacked into / only
# when no libvulkan is installed and we are root, as the device README says). Output in $OUT:
# machine.txt, proof.log, decode.txt, inference/report.{json,md}, training/report.{json,md}, bench.log.
# Each step gets what is left of PROOF_BUDGET_S (default 390 s; the run's timeout is 420 s).
# PROOF_MODE=quick runs doctor's --quick plan (the CPU-only rehearsal of this script).
# PROOF_STEPS: "decode inference training bench" (default: the last three). decode, when picked,
# runs first: bench/server-vs-direct.ts on the CPU backend (the server's decode and TTFT against
# node-llama-cpp called directly, issue 28) with PROOF_DECODE_ARGS (default: 2 threads, 48
# tokens, 5 rounds), on a machine whose other cores are quiet. PROOF_DECODE_S caps it (150).
# PROOF_BENCH_BACKENDS: the trainer bench's backends, in order (default "webgpu wasm"). wasm runs
# the native CPU kernels when pack.sh carried them (.gpu/gemm.node).
# "cycle" (issue 31) runs bench/learning-cycle.ts once per shape in PROOF_CYCLE_SHAPES (default
# qwen2.5-0.5b) with PROOF_CYCLE_ARGS (default --think 0): the whole learning cycle with the app's
# own choices, which on a GPU machine are Vulkan for serving and WebGPU for the trainer; each
# capped by PROOF_CYCLE_S (default 200), output in cycle-SHAPE.txt. PROOF_SHAPE_S caps the shape
# models' generation (default 150 s; the Qwen3-4B shape needs ~240 s).
set -u
START=$(date +%s)
BUDGET=${PROOF_BUDGET_S:-390}
MODE=${PROOF_MODE:-deep}
BENCH_SHAPE=${PROOF_BENCH_SHAPE:-qwen2.5-0.5b}
BENCH_S=${PROOF_BENCH_S:-90}
BENCH_BACKENDS=${PROOF_BENCH_BACKENDS:-webgpu wasm}
DECODE_S=${PROOF_DECODE_S:-150}
DECODE_ARGS=${PROOF_DECODE_ARGS:---tokens 48 --rounds 5}
DECODE_THREADS=${PROOF_DECODE_THREADS:-2}
CYCLE_SHAPES=${PROOF_CYCLE_SHAPES:-qwen2.5-0.5b}
CYCLE_ARGS=${PROOF_CYCLE_ARGS:---think 0}
CYCLE_S=${PROOF_CYCLE_S:-200}
# PROOF_STEPS picks what runs (a short re-proof of the trainer after a change: "bench").
STEPS=" ${PROOF_STEPS:-inference training bench} "
has() { [[ "$STEPS" == *" $1 "* ]]; }
REPO=$(pwd)
CARRY=$(cd "${GPU_CARRY:-.gpu}" && pwd) || { echo "no carry folder (.gpu): run scripts/gpu/pack.sh"; exit 2; }
OUT=${OUT:-/tmp/gpu-out}
W=${GPU_WORK:-/tmp/clawrl-gpu}
mkdir -p "$OUT" "$W/bin" "$W/app"
exec > >(tee "$OUT/proof.log") 2>&1

elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET - $(elapsed) )); }
step() { echo "== [$(elapsed) s] $*"; }
# cap WANT RESERVE: WANT seconds, or what is left after keeping RESERVE for the steps after.
cap() { local l=$(( $(left) - $2 )); if (( l < $1 )); then echo $(( l > 0 ? l : 1 )); else echo "$1"; fi; }

step "unpacking (carry $(du -sh "$CARRY" | cut -f1))"
[ -x "$W/bin/node" ] || { xz -dc "$CARRY/node.xz" > "$W/bin/node" && chmod +x "$W/bin/node"; }
tar -xJf "$CARRY/src.tar.xz" -C "$W/app"
tar -xJf "$CARRY/nm.tar.xz" -C "$W/app"
if [ -s "$CARRY/gemm.node" ]; then mkdir -p "$W/app/trainer/native/build" && cp "$CARRY/gemm.node" "$W/app/trainer/native/build/"; echo "native CPU kernels: carried"; fi
mkdir -p "$W/app/scripts/gpu" && cp "$REPO/scripts/gpu/shapes.ts" "$REPO/scripts/gpu/summary.mjs" "$W/app/scripts/gpu/"
export PATH="$W/bin:$PATH"
echo "node $(node --version), app at $(cat "$CARRY/src.commit" 2>/dev/null || echo '?')"

# Vulkan: the loader (Debian's, if the image has none) and NVIDIA's ICD manifest.
if ! ldconfig -p | grep -q 'libvulkan\.so\.1'; then
  if [ "$(id -u)" = 0 ] && command -v dpkg >/dev/null; then
    for f in "$CARRY"/debs/*.deb; do dpkg -x "$f" /; done
    ldconfig
    echo "Vulkan loader: unpacked $(ls "$CARRY"/debs | tr '\n' ' ')"
  else echo "Vulkan loader: none installed and not root: Vulkan rows will say so"; fi
fi
for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
  if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ]; then export VK_DRIVER_FILES="$icd"; fi
done
export __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json}
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}"

{
  echo "# machine ($(date -u +%FT%TZ))"
  uname -a
  (nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.max.sm,power.limit --format=csv || echo "nvidia-smi: none") 2>&1
  grep -m1 'model name' /proc/cpuinfo; nproc; free -g | head -2
  cat /proc/driver/nvidia/version 2>/dev/null
  ldconfig -p | grep -Ei 'libvulkan|libGLX_nvidia|libnvidia-ml|libcudart' || true
  [ -n "${VK_DRIVER_FILES:-}" ] && cat "$VK_DRIVER_FILES"
  (cd "$W/app" && ls node_modules/@node-llama-cpp/)
} > "$OUT/machine.txt" 2>&1
head -4 "$OUT/machine.txt" | tail -2

cd "$W/app"
export CLAWRL_HOME="$W/home" # no installed models: doctor plans for its shapes only
if [ "$MODE" = deep ]; then SHAPES="qwen3-0.6b qwen3-1.7b"; else SHAPES="qwen3-0.6b qwen2.5-0.5b"; fi
has inference || has training || SHAPES=""
has bench && SHAPES="$SHAPES $BENCH_SHAPE"
has decode && SHAPES="$SHAPES qwen2.5-0.5b"
has cycle && SHAPES="$SHAPES $CYCLE_SHAPES"
SHAPES=$(echo $SHAPES | tr ' ' '\n' | sort -u | tr '\n' ' ')
step "generating shape models in parallel: $SHAPES"
pids=()
# Kept for the steps after: 200 s for doctor's, else 30 s a trainer backend; 60 s for decode.
if has inference || has training; then reserve=200; elif has bench; then reserve=$((30 * $(echo $BENCH_BACKENDS | wc -w))); else reserve=0; fi
has decode && reserve=$((reserve + 60))
has cycle && reserve=$((reserve + 60 * $(echo $CYCLE_SHAPES | wc -w)))
for s in $SHAPES; do timeout -k 5 "$(cap "${PROOF_SHAPE_S:-150}" $reserve)" node --import tsx scripts/gpu/shapes.ts "$s" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || echo "a shape generation failed (exit $?)"; done

if has decode; then
  # Keep for the steps after: inference 170 s, training 60 s, 30 s a trainer backend.
  reserve=0
  has inference && reserve=$((reserve + 170))
  has training && reserve=$((reserve + 60))
  has bench && reserve=$((reserve + 30 * $(echo $BENCH_BACKENDS | wc -w)))
  t=$(cap "$DECODE_S" "$reserve")
  step "decode: server vs direct, CLAWRL_THREADS=$DECODE_THREADS bench/server-vs-direct.ts --shape qwen2.5-0.5b $DECODE_ARGS --backend cpu (limit ${t} s)"
  CLAWRL_THREADS=$DECODE_THREADS timeout -k 5 "$t" node --import tsx bench/server-vs-direct.ts --shape qwen2.5-0.5b $DECODE_ARGS --backend cpu 2>&1 | tee "$OUT/decode.txt"
  echo "decode exit ${PIPESTATUS[0]}" | tee -a "$OUT/decode.txt"
fi

if has inference; then
  step "doctor --$MODE --only inference (node-llama-cpp: cuda, vulkan, cpu)"
  timeout -k 5 "$(cap 150 170)" node bin/clawrl doctor "--$MODE" --json --only inference --out "$OUT/inference" > /dev/null
  echo "doctor inference exit $?"
fi

if has training; then
  step "doctor --$MODE --webgpu --only training (webgpu, wasm, cpu; LoRA step on the fastest)"
  timeout -k 5 "$(cap 200 60)" node bin/clawrl doctor "--$MODE" --json --webgpu --only training --out "$OUT/training" > /dev/null
  echo "doctor training exit $?"
fi

nb=$(echo $BENCH_BACKENDS | wc -w); i=0
has bench && for b in $BENCH_BACKENDS; do
  i=$((i + 1))
  t=$(cap "$BENCH_S" $(( i < nb ? 35 : 0 )))
  if (( t < 25 )); then step "bench trainer-real-size $b: skipped, ${t} s left"; continue; fi
  step "bench trainer-real-size --backend $b --shapes $BENCH_SHAPE --configs 1x128 (limit ${t} s)"
  timeout -k 5 "$t" node --import tsx bench/trainer-real-size.ts --backend "$b" --shapes "$BENCH_SHAPE" --configs 1x128 --steps 2 2>&1 | tee -a "$OUT/bench.log"
  echo "bench $b exit ${PIPESTATUS[0]}" | tee -a "$OUT/bench.log"
done

ncy=$(echo $CYCLE_SHAPES | wc -w); i=0
has cycle && for s in $CYCLE_SHAPES; do
  i=$((i + 1))
  t=$(cap "$CYCLE_S" $(( i < ncy ? 60 : 0 )))
  if (( t < 40 )); then step "learning cycle $s: skipped, ${t} s left"; continue; fi
  step "learning cycle: bench/learning-cycle.ts --shape $s $CYCLE_ARGS (limit ${t} s)"
  timeout -k 5 "$t" node --import tsx bench/learning-cycle.ts --shape "$s" $CYCLE_ARGS > "$OUT/cycle-$s.txt" 2>&1
  echo "cycle $s exit $?" | tee -a "$OUT/cycle-$s.txt"
  grep -E 'trainer backend|model loaded' "$OUT/cycle-$s.txt" | head -4; sed -n '/^now:/,$p' "$OUT/cycle-$s.txt" | head -16
done

step "summary"
node scripts/gpu/summary.mjs "$OUT"
if [ -s "$OUT/decode.txt" ]; then echo "decode (server vs direct, CPU):"; grep -E '^(model|[a-z]+:$|  (TTFT|decode) )' "$OUT/decode.txt" | sed 's/^/  /'; fi
