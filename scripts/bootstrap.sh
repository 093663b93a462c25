#!/usr/bin/env bash
# Create or refresh the project's virtualenv (.venv) from pyproject.toml.
# Sourced by scripts/test.sh and scripts/dev.sh; safe to run on its own.
#
# Python: the Lambda runtime's minor version (3.12) when it can be found (pyenv or PATH),
# else 3.13, else any python3 >= 3.11. JOBHOOKS_PYTHON overrides the choice.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

find_python() {
  if [ -n "${JOBHOOKS_PYTHON:-}" ]; then echo "$JOBHOOKS_PYTHON"; return; fi
  local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}" minor candidate
  for minor in 3.12 3.13; do
    for candidate in "$pyenv_root"/versions/"$minor".*/bin/python"$minor"; do
      [ -x "$candidate" ] && { echo "$candidate"; return; }
    done
    if command -v "python$minor" >/dev/null 2>&1 && "python$minor" -c '' 2>/dev/null; then
      command -v "python$minor"; return
    fi
  done
  if command -v python3 >/dev/null 2>&1 \
     && python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    command -v python3; return
  fi
  echo "jobhooks: Python 3.11 or newer is required (3.12 preferred: the Lambda runtime)" >&2
  exit 1
}

python="$(find_python)"
stamp="$venv/.jobhooks-stamp"
want="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])') $(sha256sum "$root/pyproject.toml" | cut -c1-16)"

if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "jobhooks: preparing $venv with $python" >&2
  if ! "$python" -m venv --help >/dev/null 2>&1 || ! "$python" -c 'import ensurepip' 2>/dev/null; then
    # Debian splits venv out of python3.
    echo "jobhooks: installing python3-venv (Debian)" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  fi
  rm -rf "$venv"
  "$python" -m venv "$venv"
  # uv resolves and installs the ~120 packages in about 20 s where pip took about 4 minutes
  # on two busy cores (its cache, ~/.cache/uv, makes the next venv quicker still). Without uv
  # (no registry at hand, an unusual platform) pip does the same work.
  if "$venv/bin/python" -m pip install -q uv \
     && "$venv/bin/uv" pip install -q --python "$venv/bin/python" -e "$root[dev]"; then
    :
  else
    echo "jobhooks: uv failed; installing with pip" >&2
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q -e "$root[dev]"
  fi
  echo "$want" > "$stamp"
fi
