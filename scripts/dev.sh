#!/usr/bin/env bash
# Set everything up and run the whole bridge on this machine: `jobhooks dev --demo`.
# Extra arguments go to `jobhooks dev` (see `jobhooks dev --help`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/bootstrap.sh
if [ -x scripts/ensure-rabbitmq.sh ]; then scripts/ensure-rabbitmq.sh; fi
if [ "$#" -eq 0 ]; then set -- --demo; fi
exec .venv/bin/jobhooks dev "$@"
