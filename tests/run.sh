#!/usr/bin/env bash
# Install what the test suite needs, prepare its local servers, and run the whole suite:
# unit and property tests, the real llama.cpp server and PostgreSQL tests, every notebook under strict nbval,
# and every notebook run in a real browser (tests/test_browser.py).
# Extra arguments go to pytest (e.g. `bash tests/run.sh -x -q`).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check -r requirements-dev.txt
bash tests/setup_llama.sh
# A throwaway PostgreSQL server on 127.0.0.1 for the multi-user storage tests (they must not skip here).
eval "$(bash tests/setup_postgres.sh | tail -n 1)"
export WORKSHOP_REQUIRE_POSTGRES=1
# Debian's Chromium and Playwright for the browser test (it must not skip here).
bash tests/setup_browser.sh
export WORKSHOP_REQUIRE_BROWSER=1
python -m pytest --nbval --nbval-current-env -p no:cacheprovider tests notebooks "$@"
