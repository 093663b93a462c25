#!/usr/bin/env bash
# Checks template.yaml with the SAM CLI itself: `sam validate --lint`, then `sam build` (the layer
# and the three functions, arm64). Needs no AWS account or credentials; `sam build` needs the
# package registry for the layer's requirements.
#
# aws-sam-cli pins dependencies that conflict with the project's, so it lives in its own venv,
# .venv-sam, created on first use. `sam build` for runtime python3.12 needs a python3.12 on PATH
# ("Binary validation failed" otherwise): pyenv's is put first when pyenv is present.
#
# Usage: scripts/check-template.sh [--template FILE] [--build-dir DIR] [--no-build] [--no-lint]
#
# --no-lint skips `sam validate --lint`: that is cfn-lint (aws-sam-cli's own copy, 1.58 as the
# project's), and tests/infra/test_template.py runs the project's with the serverless rules too.
# scripts/test.sh passes it, since its pytest run includes that test (about 8 s of CPU saved).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
template="$root/template.yaml"
build_dir="$root/.aws-sam/build"
build=1
lint=1
while [ $# -gt 0 ]; do
    case "$1" in
        --template) template="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
        --build-dir) build_dir="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        --no-lint) lint=0; shift ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "check-template: unknown argument $1" >&2; exit 2 ;;
    esac
done

export SAM_CLI_TELEMETRY=0
# sam validate wants a region even though --lint never calls AWS.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-${AWS_REGION:-us-east-1}}"

if command -v pyenv >/dev/null 2>&1; then
    for dir in "$(pyenv root)"/versions/3.12.*/bin; do
        [ -x "$dir/python3.12" ] && python312_dir="$dir"
    done
    if [ -n "${python312_dir:-}" ]; then
        export PATH="$python312_dir:$PATH"
    fi
fi
if ! command -v python3.12 >/dev/null 2>&1; then
    echo "check-template: python3.12 is needed on PATH (runtime python3.12); install it or pyenv's 3.12" >&2
    exit 1
fi

sam_venv="$root/.venv-sam"
if [ ! -x "$sam_venv/bin/sam" ]; then
    echo "check-template: installing aws-sam-cli into $sam_venv"
    python3.12 -m venv "$sam_venv"
    # The project's venv brings uv (scripts/bootstrap.sh): seconds instead of minutes of pip.
    uv="$root/.venv/bin/uv"
    if ! { [ -x "$uv" ] && "$uv" pip install --quiet --python "$sam_venv/bin/python" aws-sam-cli; }
    then
        "$sam_venv/bin/pip" install --quiet --disable-pip-version-check aws-sam-cli
    fi
fi
sam="$sam_venv/bin/sam"
"$sam" --version

cd "$(dirname "$template")"
if [ "$lint" = 1 ]; then
    echo "check-template: sam validate --lint ($template)"
    "$sam" validate --lint --template-file "$template"
fi

if [ "$build" = 1 ]; then
    missing=0
    for handler in functions/ingest/app.py functions/deliver/app.py functions/api/app.py; do
        if [ ! -f "$handler" ]; then
            echo "check-template: $handler is missing: sam build needs every function's code" >&2
            missing=1
        fi
    done
    [ "$missing" = 0 ] || exit 1
    echo "check-template: sam build -> $build_dir"
    "$sam" build --template-file "$template" --build-dir "$build_dir"
    # The layer must carry the package where Lambda looks for it (/opt/python).
    if [ ! -f "$build_dir/CoreLayer/python/jobhooks/__init__.py" ]; then
        echo "check-template: the built layer has no python/jobhooks package" >&2
        exit 1
    fi
    # ... and nothing else: the tools (tools/jobhooks_tools) never ship in it
    # (tests/infra/test_layer_contents.py checks that every module it holds is one a function
    # imports).
    extra=$(cd "$build_dir/CoreLayer/python" && find . -name '*.py' -path './jobhooks*' \
        | sed 's|^\./||' | sort | comm -23 - <(cd "$root/layers/jobhooks" && find jobhooks -name '*.py' | sort))
    if [ -n "$extra" ] || [ -d "$build_dir/CoreLayer/python/jobhooks_tools" ]; then
        echo "check-template: the built layer holds modules that are not in layers/jobhooks:" \
            "$extra" >&2
        exit 1
    fi
fi
echo "check-template: OK"
