"""Cold start: how much `bench/coldstart.py`'s figure moves between runs, and why.

    .venv/bin/python bench/coldstart_spread.py [--rounds 60] [--against <other tree>]

Runs `import boto3` and every handler (with `--against`, every handler of the other tree too,
e.g. a worktree of main) in fresh processes, each round all of them once in a shuffled order,
with `bench/coldstart.py`'s own child and environments, and `resource.getrusage` around the same
import. Prints, per target: the median and fastest import CPU time, its coefficient of
variation and that of its user and system time, and how many processes took a major page fault;
then, per handler, how closely its CPU time follows boto3's within a round, and how much one run
of the bench's figure (the median over the rounds of each round's handler / boto3) would move
with 11, 21 or 41 rounds (the standard deviation of that median over bootstrap resamples of the
rounds). With `--against`, each handler's CPU time against the other tree's in the same round.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import coldstart

CHILD = r"""
import json, os, resource, sys, time
spec = json.loads(os.environ["COLDSTART_SPEC"])
sys.path[:0] = spec["path"]
before = resource.getrusage(resource.RUSAGE_SELF)
started_cpu = time.process_time()
if spec["module"] == "boto3":
    import boto3
else:
    import app
cpu = time.process_time() - started_cpu
after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({
    "cpu_ms": cpu * 1000,
    "user_ms": (after.ru_utime - before.ru_utime) * 1000,
    "sys_ms": (after.ru_stime - before.ru_stime) * 1000,
    "major_faults": after.ru_majflt - before.ru_majflt,
}))
"""


def cv(values: Sequence[float]) -> float:
    return statistics.pstdev(values) / statistics.mean(values)


def correlation(first: Sequence[float], second: Sequence[float]) -> float:
    mean_first, mean_second = statistics.mean(first), statistics.mean(second)
    covariance = sum(
        (a - mean_first) * (b - mean_second) for a, b in zip(first, second, strict=True)
    )
    spread = sum((a - mean_first) ** 2 for a in first) * sum((b - mean_second) ** 2 for b in second)
    return covariance / math.sqrt(spread)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--against", type=Path, help="another tree's root, e.g. main's worktree")
    args = parser.parse_args(argv)

    trees = {"": coldstart.ROOT}
    if args.against is not None:
        trees = {"after ": coldstart.ROOT, "before ": args.against.resolve()}
    server, environments = coldstart.template_environments()
    try:
        targets: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
            "boto3": (
                {"module": "boto3", "path": []},
                coldstart.child_environment(environments["boto3"]),
            )
        }
        for prefix, root in trees.items():
            for name in coldstart.HANDLERS:
                path = [str(root / "layers" / "jobhooks"), str(root / "functions" / name)]
                environment = coldstart.child_environment(environments[name])
                targets[prefix + name] = ({"module": "app", "path": path}, environment)
        for spec, environment in targets.values():  # bytecode caches
            coldstart.run_child(spec, environment, CHILD)
        order = list(targets)
        rounds: list[dict[str, dict[str, float]]] = []
        for _ in range(args.rounds):
            random.shuffle(order)
            rounds.append({name: coldstart.run_child(*targets[name], CHILD) for name in order})
    finally:
        server.stop()

    print(f"{args.rounds} rounds, import CPU time of each fresh process:")
    print(
        f"  {'':<20} {'median ms':>9} {'fastest':>8} {'CV':>6} {'user CV':>8} {'sys CV':>7}"
        "  major faults"
    )
    for name in targets:
        results = [one[name] for one in rounds]
        cpu = [result["cpu_ms"] for result in results]
        faulted = sum(1 for result in results if result["major_faults"] > 0)
        print(
            f"  {name:<20} {statistics.median(cpu):9.1f} {min(cpu):8.1f} {cv(cpu):6.1%} "
            f"{cv([r['user_ms'] for r in results]):8.1%} {cv([r['sys_ms'] for r in results]):7.1%}"
            f"  {faulted} of {len(results)}"
        )

    print("\nper handler: correlation of log CPU time with boto3's in the same round; the")
    print("bench's figure (median of the rounds' ratios) and its standard deviation over")
    print("bootstrap resamples of 11, 21 and 41 rounds:")
    resample = random.Random(3)
    for name in targets:
        if name == "boto3":
            continue
        logs = [math.log(one[name]["cpu_ms"]) for one in rounds]
        base = [math.log(one["boto3"]["cpu_ms"]) for one in rounds]
        ratios = [math.exp(a - b) for a, b in zip(logs, base, strict=True)]
        spreads = []
        for size in (11, 21, 41):
            medians = [statistics.median(resample.choices(ratios, k=size)) for _ in range(1500)]
            spreads.append(f"{statistics.pstdev(medians):.3f}")
        print(
            f"  {name:<20} r {correlation(logs, base):+.2f}   {statistics.median(ratios):.3f}x"
            f"   sd {' / '.join(spreads)}"
        )

    if args.against is not None:
        print("\nafter against before, the same handler in the same round (CPU time):")
        for name in coldstart.HANDLERS:
            after = [one["after " + name]["cpu_ms"] for one in rounds]
            before = [one["before " + name]["cpu_ms"] for one in rounds]
            change = statistics.median(a - b for a, b in zip(after, before, strict=True))
            ratio = statistics.median(a / b for a, b in zip(after, before, strict=True))
            print(
                f"  {name:<12} median {change:+6.1f} ms per round ({ratio:.3f} of before); "
                f"fastest {min(before):.1f} -> {min(after):.1f} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
