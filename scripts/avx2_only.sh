#!/usr/bin/env bash
# Run COMMAND as on a CPU with AVX2 but no AVX-512, AMX or native bf16, the path most
# cloud x86 hosts take: CPUID answers without those bits (scripts/avx2_only/cpuid_mask.c),
# so torch, oneDNN, ONNX Runtime, OpenVINO and NumPy choose their AVX2 kernels.
# Needs a CPU with CPUID faulting (`cpuid_fault` in /proc/cpuinfo) and gcc.
#   scripts/avx2_only.sh make test
#   scripts/avx2_only.sh make bench
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_file="$here/avx2_only/cpuid_mask.c"
library="$here/../var/avx2_only/cpuid_mask.so"
if [ $# -eq 0 ]; then
  echo "usage: scripts/avx2_only.sh COMMAND [ARG...]" >&2
  exit 2
fi
if ! grep -qw cpuid_fault /proc/cpuinfo; then
  echo "avx2_only: this CPU cannot fault on CPUID (no cpuid_fault in /proc/cpuinfo);" \
       "run on an AVX2-only host instead" >&2
  exit 3
fi
if [ ! -f "$library" ] || [ "$source_file" -nt "$library" ]; then
  mkdir -p "$(dirname "$library")"
  gcc -O2 -shared -fPIC -o "$library.part" "$source_file" -ldl
  mv "$library.part" "$library"
fi
export LD_PRELOAD="$(cd "$(dirname "$library")" && pwd)/cpuid_mask.so${LD_PRELOAD:+:$LD_PRELOAD}"
exec "$@"
