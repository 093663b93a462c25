#!/usr/bin/env bash
# Set everything up and run every check: lint, types, template checks, the test suite.
# Installs what the tests need (the virtualenv, Debian's rabbitmq-server, chromium and
# chromium-driver when absent); the suite itself starts moto's server, a private RabbitMQ node
# and headless Chromium on free ports (one of each per worker).
#   scripts/test.sh                 everything, pytest in parallel workers
#   scripts/test.sh --deep          everything, with many more generated examples per property
#   scripts/test.sh tests/unit -x   only pytest, with these arguments (one process; add -n 2
#                                   for workers)
# JOBHOOKS_TEST_WORKERS sets the number of pytest workers of the full run (default: one per
# core, at least 2); docs/development.md says where the time goes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Each module is compiled once and kept (__pycache__, ignored by git), not once per process:
# the suite starts hundreds of Python processes (workers, moto servers, shovels, the CLI,
# cfn-lint, sam), and with PYTHONDONTWRITEBYTECODE set (containers often set it) each of them
# compiled boto3, botocore, moto and pydantic from source: 2-3x their import CPU.
unset PYTHONDONTWRITEBYTECODE

if [ "${1:-}" = "--deep" ]; then
    shift
    export JOBHOOKS_DEEP_TESTS=1
fi

# The Debian packages install while the virtualenv is built: both mostly wait on downloads.
system_log="$(mktemp -t jobhooks-system.XXXXXX)"
(
    if [ -x scripts/ensure-rabbitmq.sh ]; then scripts/ensure-rabbitmq.sh; fi
    if [ -x scripts/ensure-chromium.sh ]; then scripts/ensure-chromium.sh; fi
) >"$system_log" 2>&1 &
system_pid=$!
source scripts/bootstrap.sh
if ! wait "$system_pid"; then
    cat "$system_log" >&2
    exit 1
fi
cat "$system_log"
rm -f "$system_log"

if [ "$#" -gt 0 ]; then exec .venv/bin/pytest "$@"; fi

# The static checks run beside pytest: they need one core for a minute or two, and the
# suite's workers spend much of their time waiting on brokers, queues and receivers.
static_log="$(mktemp -t jobhooks-static.XXXXXX)"
# Every check runs, and any that fails fails the run. (`set -e` would not do it: a command that
# fails inside an `a && b` list does not stop a shell, so a ruff failure once passed unseen.)
(
    failed=0
    echo "== ruff"
    .venv/bin/ruff check . && .venv/bin/ruff format --check . || failed=1
    echo "== mypy (strict)"
    .venv/bin/mypy || failed=1
    # Without `sam validate --lint`: that is cfn-lint, which pytest runs too
    # (tests/infra/test_template.py, with the serverless rules).
    if [ -x scripts/check-template.sh ]; then
        echo "== template"
        scripts/check-template.sh --no-lint || failed=1
    fi
    exit "$failed"
) >"$static_log" 2>&1 &
static_pid=$!

workers="${JOBHOOKS_TEST_WORKERS:-$(nproc 2>/dev/null || echo 2)}"
if [ "$workers" -lt 2 ]; then workers=2; fi
echo "== pytest ($workers workers)"
# The whole suite runs, so its report of the grants of template.yaml no test exercised is
# complete: such a grant (not allow-listed in tests/iam-grants-only-aws-exercises.yaml) fails
# the run (docs/development.md, "The IAM report", says what to do then). 0 makes the report
# advisory again, for a run that leaves tests out on purpose.
export JOBHOOKS_IAM_UNEXERCISED_FAILS="${JOBHOOKS_IAM_UNEXERCISED_FAILS:-1}"
set +e
.venv/bin/pytest -q -p no:cacheprovider -n "$workers" --dist loadgroup --durations=15
status=$?
wait "$static_pid"
static_status=$?
set -e
cat "$static_log"
rm -f "$static_log"
if [ "$static_status" -ne 0 ]; then
    echo "== static checks failed (exit $static_status)" >&2
    exit "$static_status"
fi
# pytest exits 5 when it collected nothing: that is a failure here, never a pass.
exit "$status"
