"""``scripts/avx2_only.sh``: a program run through it sees a CPU without AVX-512,
AMX or native bf16, as most cloud x86 hosts are, so the paths of such a host
(ONNX Runtime fp32 instead of bf16, AVX2 kernels) can be tested and measured on
a host that has them. Where the CPU cannot fault on CPUID the script refuses with
a clear reason instead of running unmasked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "avx2_only.sh"
CAN_FAULT = "cpuid_fault" in Path("/proc/cpuinfo").read_text().split()

SEEN = """
import json, sys
import torch, numpy
from numpy._core._multiarray_umath import __cpu_features__ as numpy_features
from retrieval.cpu import has_native_bf16
from retrieval.runtime_choice import choice_file, host_description
from pathlib import Path
print(json.dumps({
    "torch": torch.backends.cpu.get_cpu_capability(),
    "fast_bf16": has_native_bf16(),
    "numpy_avx512f": bool(numpy_features.get("AVX512F")),
    "numpy_avx2": bool(numpy_features.get("AVX2")),
    "host": host_description(),
    "choice_file": choice_file(Path("/cache")).name,
}))
"""


def run(*command: str, masked: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    prefix = [str(SCRIPT)] if masked else []
    return subprocess.run(
        [*prefix, *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def seen(*, masked: bool) -> dict[str, object]:
    result = run(sys.executable, "-c", SEEN, masked=masked)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def masking_here() -> bool:
    """Whether this CPU can be masked; where it cannot, the script must refuse with
    its reason instead of running unmasked (asserted here)."""
    if CAN_FAULT:
        return True
    result = run("true")
    assert result.returncode == 3
    assert "cannot fault on CPUID" in result.stderr
    return False


def test_a_program_run_through_it_takes_the_avx2_kernels_and_no_bf16() -> None:
    if not masking_here():
        return
    masked, native = seen(masked=True), seen(masked=False)
    assert masked["torch"] == "AVX2"
    assert masked["fast_bf16"] is False
    assert masked["numpy_avx2"] is True and masked["numpy_avx512f"] is False
    assert str(masked["host"]).endswith("kernels AVX2")
    if native["torch"] != "AVX2":  # a host with AVX-512: the mask changed what was chosen
        assert native["numpy_avx512f"] is True
        # so a path measured unmasked is not reused masked, nor the other way round
        assert masked["choice_file"] != native["choice_file"]


def test_a_later_sigsegv_handler_is_chained_and_a_real_crash_still_ends_the_process() -> None:
    if not masking_here():
        return
    # faulthandler installs its SIGSEGV handler before torch asks CPUID: the mask holds
    # after it, and a real fault still reaches faulthandler and kills the process
    crash = (
        "import torch, ctypes; print(torch.backends.cpu.get_cpu_capability(), flush=True);"
        " ctypes.string_at(0)"
    )
    result = run(sys.executable, "-X", "faulthandler", "-c", crash)
    assert result.stdout.strip() == "AVX2"
    assert result.returncode == -11
    assert "Segmentation fault" in result.stderr


def test_without_a_command_it_says_how_to_use_it() -> None:
    result = run()
    assert result.returncode == 2
    assert "usage: scripts/avx2_only.sh COMMAND" in result.stderr


def test_a_sigsegv_sent_by_kill_still_ends_the_process() -> None:
    if not masking_here():
        return
    # the converter sandbox's test hook crashes a child so: not a fault to answer
    result = run(sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert result.returncode == -11
