#!/usr/bin/env bash
# Install what the test suite needs, prepare its local servers, and run the whole suite:
# unit and property tests, the real llama.cpp server tests, and every notebook under strict nbval.
# Extra arguments go to pytest (e.g. `bash tests/run.sh -x -q`).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check -r requirements-dev.txt
bash tests/setup_llama.sh
python -m pytest --nbval --nbval-current-env -p no:cacheprovider tests notebooks "$@"
