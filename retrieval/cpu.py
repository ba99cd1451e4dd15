"""What CPUID tells this process about its CPU, read without importing torch.

The libraries pick their kernels from CPUID, which a hypervisor or a CPUID mask
(``scripts/avx2_only.sh``) can answer without instructions ``/proc/cpuinfo``
still lists. NumPy reads CPUID itself at import, so its view is the one torch,
oneDNN, ONNX Runtime and OpenVINO get; importing torch only to ask would cost a
process ~3 s of its start.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def features() -> dict[str, bool]:
    """NumPy's CPUID features: ``AVX2``, ``AVX512_SKX`` (F, CD, BW, DQ, VL),
    ``AVX512BF16``, … (NumPy is pinned at 2.x, which keeps them here)."""
    from numpy._core._multiarray_umath import __cpu_features__

    return dict(__cpu_features__)


def has_native_bf16() -> bool:
    """avx512_bf16 (every CPU with AMX has it too): bf16 products in hardware, where
    elsewhere oneDNN emulates them no faster than fp32."""
    return bool(features().get("AVX512BF16"))


def kernels() -> str:
    """The widest vector kernels the libraries take here, named as torch's
    ``get_cpu_capability`` names them: ``AVX512``, ``AVX2`` or ``DEFAULT``."""
    found = features()
    if found.get("AVX512_SKX"):
        return "AVX512"
    return "AVX2" if found.get("AVX2") else "DEFAULT"
