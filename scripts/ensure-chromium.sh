#!/bin/sh
# Installs Debian's chromium and chromium-driver when either is missing: the portal's browser
# tests (tests/browser) drive the system browser headless through Selenium and
# /usr/bin/chromedriver. Nothing is downloaded outside the distribution's packages: no browser
# is ever fetched by a test tool.
set -eu

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "chromium and chromium-driver are installed"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium or chromedriver is missing and this is not a Debian/Ubuntu system: install" \
        "Chromium and its matching chromedriver with your package manager, so that both are on" \
        "PATH (the browser tests fail without them, naming this script)" >&2
    exit 1
fi

if [ "$(id -u)" -eq 0 ]; then
    as_root() { "$@"; }
elif command -v sudo >/dev/null 2>&1; then
    as_root() { sudo "$@"; }
else
    echo "chromium is missing; run as root: apt-get update && apt-get install -y" \
        "chromium chromium-driver" >&2
    exit 1
fi

as_root apt-get update
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    chromium chromium-driver

echo "chromium and chromium-driver installed"
