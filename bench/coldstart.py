"""Cold start: what importing each Lambda handler costs, against a bare `import boto3`.

    .venv/bin/python bench/coldstart.py [--runs 41] [--top 8] [--no-first-request]

Each figure is the median of `--runs` fresh processes (after one unmeasured run that writes the
bytecode caches), timed inside the process around the import statement alone: the interpreter's
own start-up is the same for every target and is left out. A handler is imported as Lambda
imports it: `functions/<name>/app.py` with the layer (`layers/jobhooks`) on `sys.path` and the
template's environment for that function (template.yaml resolved against a private moto server,
so every JOBHOOKS_* variable has the value a deployed stack would give it). The baseline,
`import boto3`, runs in the same processes' conditions, interleaved with the handlers, so load
on the machine moves both alike.

Also measured, in fresh processes too: the API function's import plus its first request of a
typical route (`GET /v1/subscriptions?tenant_id=...` against moto), i.e. what a cold API call
costs once the work deferred from import (AWS clients and their models, pydantic schemas) is
paid. Then `python -X importtime` says which modules dominate each handler's import.

The figures are CPU time (`time.process_time`): on a shared machine, wall time mostly measures
how long a process waited for a core; both are printed. Each round runs every target once, in a
shuffled order, and a ratio is the median over the rounds of that round's handler / boto3. The
last line is the target: the slowest handler's import over boto3's, at most 1.3x.

How many rounds: one fresh process's import CPU time varies by about 14 % (coefficient of
variation) on this 2-core machine, boto3's as much as a handler's, and two processes of one
round vary nearly independently, so one round's ratio varies by about 18 %. The median of 11
rounds then moves by about 0.07 from one run to the next (0.3 between the extremes of a few
runs), of 41 rounds by about 0.035 (docs/performance.md, "a steadier figure"). Each ratio is
printed with the interval that holds the median of all rounds with at least 95 % confidence
(order statistics of the rounds' ratios, no assumption on their distribution): a run whose
interval straddles 1.3x has not decided whether the target is met.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LAYER = ROOT / "layers" / "jobhooks"
TARGET_RATIO = 1.3
BASELINE = "import boto3"
HANDLERS = {
    "ingest": "IngestFunction",
    "deliver": "DeliverFunction",
    "api": "ApiFunction",
    "portal": "PortalFunction",
    "authorizer": "AuthorizerFunction",
}

# Runs in a fresh interpreter: times one import and, optionally, the API's first request.
CHILD = r"""
import json, os, sys, time
spec = json.loads(os.environ["COLDSTART_SPEC"])
sys.path[:0] = spec["path"]
started, started_cpu = time.perf_counter(), time.process_time()
if spec["module"] == "boto3":
    import boto3
else:
    import app
imported, imported_cpu = time.perf_counter(), time.process_time()
result = {
    "import_ms": (imported - started) * 1000,
    "import_cpu_ms": (imported_cpu - started_cpu) * 1000,
}
if spec.get("event") is not None:
    class Context:
        function_name = "jobhooks-coldstart"
        function_version = "$LATEST"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:coldstart"
        memory_limit_in_mb = 256
        aws_request_id = "coldstart"
        log_group_name = "/aws/lambda/coldstart"
        log_stream_name = "coldstart"
        def get_remaining_time_in_millis(self):
            return 15000
    answer = app.handler(spec["event"], Context())
    assert answer["statusCode"] == 200, answer
    result["first_request_ms"] = (time.perf_counter() - imported) * 1000
    result["first_request_cpu_ms"] = (time.process_time() - imported_cpu) * 1000
print(json.dumps(result))
"""


def child_environment(variables: Mapping[str, str]) -> dict[str, str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("JOBHOOKS_", "POWERTOOLS_", "AWS_"))
    }
    environment.update(variables)
    # Powertools logs every invocation; a bench has no use for it.
    environment["POWERTOOLS_LOG_LEVEL"] = "WARNING"
    environment["PYTHONDONTWRITEBYTECODE"] = ""
    return environment


def run_child(
    spec: Mapping[str, Any], environment: Mapping[str, str], child: str = CHILD
) -> dict[str, float]:
    """What `child` (this bench's, or another that reads the same spec) prints last, as JSON."""
    completed = subprocess.run(
        [sys.executable, "-c", child],
        env={**environment, "COLDSTART_SPEC": json.dumps(spec)},
        capture_output=True,
        text=True,
        check=False,
        cwd=str(ROOT),
    )
    if completed.returncode != 0:
        raise SystemExit(f"{spec['module']}: the child failed\n{completed.stderr[-3000:]}")
    result: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def import_times(
    module: str, path: Sequence[str], environment: Mapping[str, str]
) -> list[tuple[str, int, int]]:
    """(module, self µs, cumulative µs) of every import `python -X importtime` reports."""
    code = f"import sys; sys.path[:0] = {list(path)!r}; import {module}"
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env=dict(environment),
        capture_output=True,
        text=True,
        check=True,
        cwd=str(ROOT),
    )
    rows = []
    for line in completed.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if match:
            rows.append((match.group(4), int(match.group(1)), int(match.group(2))))
    return rows


def dominant_packages(rows: Sequence[tuple[str, int, int]], top: int) -> list[tuple[str, float]]:
    """Self time summed per top-level package (jobhooks per subpackage), largest first."""
    totals: dict[str, int] = defaultdict(int)
    for name, self_us, _ in rows:
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "jobhooks" else parts[0]
        totals[key] += self_us
    ranked = sorted(totals.items(), key=lambda item: item[1], reverse=True)[:top]
    return [(name, us / 1000) for name, us in ranked]


def template_environments() -> tuple[Any, dict[str, dict[str, str]]]:
    """A private moto server with template.yaml's resources, and each function's environment."""
    from jobhooks_tools.local.gateway import LOCAL_PARAMETERS
    from jobhooks_tools.local.moto_server import MotoServer, local_aws_environment
    from jobhooks_tools.local.template import provision
    from jobhooks_tools.sample_events import demo_key

    server = MotoServer().start()
    aws = local_aws_environment(server.endpoint_url)
    os.environ.update(aws)
    # The local operator is the deployment's operator, as on `jobhooks dev`.
    resources = provision(
        fetcher_keys=[demo_key().hex],
        endpoint_url=server.endpoint_url,
        parameters=LOCAL_PARAMETERS,
    )
    environments = {
        name: {**aws, **dict(resources.functions[logical_id].variables)}
        for name, logical_id in HANDLERS.items()
    }
    environments["boto3"] = dict(aws)
    return server, environments


def typical_request() -> dict[str, Any]:
    from jobhooks_tools.local.api_server import api_gateway_event
    from jobhooks_tools.local.gateway import LOCAL_OPERATOR_ARN, iam_context

    event = api_gateway_event(
        "GET", "/v1/subscriptions?tenant_id=acme&limit=10", [("user-agent", "bench")], b""
    )
    # An operator's SigV4-signed request, as API Gateway passes it on (the API answers IAM
    # callers only, and looks the caller up in the grants first): the local stack's operator.
    event["requestContext"]["authorizer"] = {"iam": iam_context(LOCAL_OPERATOR_ARN)}
    return event


def median_of(results: Sequence[Mapping[str, float]], key: str) -> float:
    return statistics.median(result[key] for result in results)


def paired_ratio(
    results: Sequence[Mapping[str, float]], baseline: Sequence[Mapping[str, float]], key: str
) -> float:
    return statistics.median(
        result[key] / base[key] for result, base in zip(results, baseline, strict=True)
    )


def median_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The narrowest order-statistic interval that holds the median with `confidence` or more:
    [x(k), x(n+1-k)] for the largest k with P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2."""
    ordered = sorted(values)
    n, k, below = len(ordered), 0, 0.0
    while k < n // 2 and 2 * (below + math.comb(n, k) / 2**n) <= 1 - confidence:
        below += math.comb(n, k) / 2**n
        k += 1
    if k == 0:  # too few rounds for the confidence: the whole range
        return ordered[0], ordered[-1]
    return ordered[k - 1], ordered[n - k]


def round_ratios(
    results: Sequence[Mapping[str, float]], baseline: Sequence[Mapping[str, float]], key: str
) -> list[float]:
    return [result[key] / base[key] for result, base in zip(results, baseline, strict=True)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41, help="fresh processes per figure")
    parser.add_argument("--top", type=int, default=8, help="dominant packages to list")
    parser.add_argument(
        "--no-first-request", action="store_true", help="skip the API's first-request figure"
    )
    args = parser.parse_args(argv)

    server, environments = template_environments()
    try:
        paths = {name: [str(LAYER), str(ROOT / "functions" / name)] for name in HANDLERS}
        paths["boto3"] = []
        targets = ["boto3", *HANDLERS]
        specs: dict[str, dict[str, Any]] = {
            name: {"module": "boto3" if name == "boto3" else "app", "path": paths[name]}
            for name in targets
        }
        envs = {name: child_environment(environments[name]) for name in targets}
        if not args.no_first_request:
            specs["api+request"] = {**specs["api"], "event": typical_request()}
            envs["api+request"] = envs["api"]
        results: dict[str, list[dict[str, float]]] = {name: [] for name in specs}
        for name in specs:  # bytecode caches
            run_child(specs[name], envs[name])
        order = list(specs)
        shuffle = random.Random(13).shuffle
        for _ in range(args.runs):
            shuffle(order)  # interleaved, so load on the machine moves every figure alike
            for name in order:
                results[name].append(run_child(specs[name], envs[name]))

        wall = {name: median_of(results[name], "import_ms") for name in targets}
        cpu = {name: median_of(results[name], "import_cpu_ms") for name in targets}
        # Each round times boto3 and every handler back to back: the median of the rounds'
        # ratios cancels the load drifting between rounds better than a ratio of medians.
        ratios = {
            name: paired_ratio(results[name], results["boto3"], "import_cpu_ms") for name in targets
        }
        intervals = {
            name: median_interval(round_ratios(results[name], results["boto3"], "import_cpu_ms"))
            for name in targets
        }
        wall_ratios = {
            name: paired_ratio(results[name], results["boto3"], "import_ms") for name in targets
        }
        print(f"cold import, median of {args.runs} fresh processes each:")
        print(
            f"  {'':<28} {'CPU ms':>8} {'ratio':>6} {'95% interval':>13}   "
            f"{'wall ms':>8} {'ratio':>6}"
        )
        for name in targets:
            label = BASELINE if name == "boto3" else f"functions/{name}/app.py"
            low, high = intervals[name]
            print(
                f"  {label:<28} {cpu[name]:8.1f} {ratios[name]:5.2f}x {low:5.2f}-{high:4.2f}x   "
                f"{wall[name]:8.1f} {wall_ratios[name]:5.2f}x"
            )
        print(
            "  (ratios: median over the rounds of each round's handler / boto3; the interval "
            "holds the median with 95 % confidence)"
        )
        if "api+request" in results:
            first = results["api+request"]
            imported = median_of(first, "import_cpu_ms")
            requested = median_of(first, "first_request_cpu_ms")
            total = statistics.median(
                result["import_cpu_ms"] + result["first_request_cpu_ms"] for result in first
            )
            wall_total = statistics.median(
                result["import_ms"] + result["first_request_ms"] for result in first
            )
            print(
                "\nAPI function, import + first request of GET /v1/subscriptions against moto "
                f"(median of {args.runs}):"
            )
            print(
                f"  CPU: import {imported:.1f} ms + first request {requested:.1f} ms = "
                f"{total:.1f} ms ({total / cpu['boto3']:.2f}x import boto3); "
                f"wall {wall_total:.1f} ms"
            )

        print("\nwhat dominates each import (self time per package, one -X importtime run, ms):")
        for name in HANDLERS:
            rows = import_times("app", paths[name], envs[name])
            packages = dominant_packages(rows, args.top)
            print(f"  {name:<8} " + ", ".join(f"{package} {ms:.0f}" for package, ms in packages))

        worst = max(HANDLERS, key=lambda name: ratios[name])
        verdict = "within" if ratios[worst] <= TARGET_RATIO else "ABOVE"
        low, high = intervals[worst]
        if low <= TARGET_RATIO < high:
            verdict += f", but the 95% interval {low:.2f}-{high:.2f}x straddles it: more --runs"
        print(
            f"\nslowest handler import / import boto3 (CPU time) = {ratios[worst]:.2f}x "
            f"({worst}; target at most {TARGET_RATIO}x: {verdict})"
        )
        return 0 if ratios[worst] <= TARGET_RATIO else 1
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
