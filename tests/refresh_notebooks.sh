#!/usr/bin/env bash
# Re-execute notebooks offline with the frozen clock, so their committed outputs are what strict nbval expects.
# Usage: bash tests/refresh_notebooks.sh notebooks/01_first_call.ipynb [more notebooks...]
set -euo pipefail
cd "$(dirname "$0")/.."
export WORKSHOP_BACKEND=offline WORKSHOP_NOW="2026-11-30T10:00:00-08:00" WORKSHOP_NO_PROMPT=1 TQDM_DISABLE=1
unset NVIDIA_API_KEY
for nb in "${@:-notebooks/*.ipynb}"; do
  jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=600 "$nb"
done
