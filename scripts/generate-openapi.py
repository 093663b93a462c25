#!/usr/bin/env python3
"""Write docs/openapi.json from the code of the HTTP API's functions (functions/api/app.py and
functions/portal/app.py).

    scripts/generate-openapi.py            # regenerate after changing a route or a model
    scripts/generate-openapi.py --check    # exit 1 when the committed document is stale

The document comes from the Event Handler (`app.get_openapi_json_schema`), so it always states
the routes, parameters, models and error answers the code really has.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "openapi.json"
# Runs from a plain checkout too, without the package installed.
sys.path.insert(0, str(ROOT / "layers" / "jobhooks"))


def render() -> str:
    from jobhooks_tools.local.api_server import openapi_document

    document = openapi_document(ROOT / "template.yaml")
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that it is current")
    args = parser.parse_args(argv)
    fresh = render()
    current = DOCUMENT.read_text(encoding="utf-8") if DOCUMENT.exists() else ""
    if args.check:
        if fresh == current:
            return 0
        diff = difflib.unified_diff(
            current.splitlines(), fresh.splitlines(), "docs/openapi.json", "generated", lineterm=""
        )
        print("\n".join(list(diff)[:60]), file=sys.stderr)
        print("docs/openapi.json is stale: run scripts/generate-openapi.py", file=sys.stderr)
        return 1
    if fresh != current:
        DOCUMENT.write_text(fresh, encoding="utf-8")
        print(f"wrote {DOCUMENT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
