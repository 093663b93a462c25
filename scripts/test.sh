#!/usr/bin/env bash
# Set everything up and run every check: lint, types, template checks, the test suite.
# Installs what the tests need (the virtualenv, Debian's rabbitmq-server, chromium and
# chromium-driver when absent); the suite itself starts moto's server, a private RabbitMQ node
# and headless Chromium on free ports.
#   scripts/test.sh                 everything
#   scripts/test.sh tests/unit -x   only pytest, with these arguments
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/bootstrap.sh
if [ -x scripts/ensure-rabbitmq.sh ]; then scripts/ensure-rabbitmq.sh; fi
if [ -x scripts/ensure-chromium.sh ]; then scripts/ensure-chromium.sh; fi

if [ "$#" -gt 0 ]; then exec .venv/bin/pytest "$@"; fi

echo "== ruff" && .venv/bin/ruff check .
echo "== mypy (strict)" && .venv/bin/mypy
if [ -x scripts/check-template.sh ]; then echo "== template" && scripts/check-template.sh; fi
echo "== pytest"
set +e
.venv/bin/pytest -q -p no:cacheprovider --durations=15
status=$?
set -e
# pytest exits 5 when it collected nothing: that is a failure here, never a pass.
exit "$status"
