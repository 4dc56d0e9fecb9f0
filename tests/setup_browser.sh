#!/usr/bin/env bash
# Prepare the browser test (tests/test_browser.py): Debian's Chromium and the Playwright client.
#
# - Installs Debian's `chromium` (apt-get update, apt-get install -y chromium) when /usr/bin/chromium
#   is missing.
#   Playwright's own browser download (`playwright install`) is not used: the test drives this Chromium
#   through executable_path.
# - Installs Playwright from PyPI at the version pinned in requirements-dev.txt when it is not importable.
# Safe to run repeatedly: when both are present it only checks them (well under a second).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
CHROMIUM="${WORKSHOP_CHROMIUM:-/usr/bin/chromium}"
say() { echo "setup_browser: $*" >&2; }

if [ ! -x "$CHROMIUM" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        say "Chromium is not installed and installing it needs root:" \
            "run 'sudo apt-get install -y chromium' first"
        exit 1
    fi
    say "installing Chromium from Debian (a minute or two)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
    if [ ! -x "$CHROMIUM" ]; then
        say "apt-get installed chromium but $CHROMIUM is missing; set WORKSHOP_CHROMIUM to its path"
        exit 1
    fi
fi

if ! "$PY" -c "import playwright.sync_api" 2>/dev/null; then
    PIN="$(grep -E '^playwright==' requirements-dev.txt || true)"
    if [ -z "$PIN" ]; then
        say "requirements-dev.txt pins no playwright version (a line 'playwright==X.Y.Z')"
        exit 1
    fi
    say "installing $PIN from PyPI"
    "$PY" -m pip install -q --disable-pip-version-check "$PIN"
fi
say "$("$CHROMIUM" --version 2>/dev/null | head -n 1); playwright $("$PY" -c \
    'from importlib.metadata import version; print(version("playwright"))')"
