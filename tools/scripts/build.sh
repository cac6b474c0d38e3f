#!/usr/bin/env bash
# Installs missing Debian packages, configures (once) and builds titan.
#   TITAN_BUILD_DIR  build directory (default: <repo>/build)
#   TITAN_JOBS       parallel build jobs (default: number of cores)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TITAN_BUILD_DIR:-$root/build}

"$root/tools/scripts/install-deps.sh"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build" -j"${TITAN_JOBS:-$(nproc)}" --quiet all titan-test-depends
