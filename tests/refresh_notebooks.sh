#!/usr/bin/env bash
# Re-execute notebooks offline with the frozen clock, so their committed outputs are what strict nbval expects.
# Usage: bash tests/refresh_notebooks.sh notebooks/01_first_call.ipynb [more notebooks...]
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(python tests/workshop_env.py)"  # the test suite's environment: offline, frozen clock
for nb in "${@:-notebooks/*.ipynb}"; do
  jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=600 "$nb"
done
