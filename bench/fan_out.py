"""CPU of ingest's fan-out per event: one delivery task per matched subscription.

    .venv/bin/python bench/fan_out.py [--subscriptions 1 8] [--rounds 41]

Times `delivery_tasks_for` (what `plan_fan_out` calls for every event read) over EVENTS
distinct Fetcher events in turn, for a tenant with each given number of matching
subscriptions: the subscriptions recur from one event to the next, as a tenant's do, and the
events do not. Prints microseconds per event and per task, the fastest and the median round,
and the fastest as a multiple of the core path's floor for a failed event (`bench/core.py`: one
HMAC-SHA256 over its signed bytes with the prepared key, one `json.loads` of its body), timed in
the same rounds.
To compare two trees in one run, alternate them with the same script:

    for tree in /path/before /path/after; do
        PYTHONPATH=$tree/layers/jobhooks .venv/bin/python bench/fan_out.py
    done
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import core
from jobhooks.ingest.fan_out import delivery_tasks_for
from jobhooks.subscriptions.model import EventType, Subscription

EVENTS = 256
AT = datetime(2026, 12, 7, tzinfo=UTC)
PAYLOAD = '{"type":"fetcher.job.completed","data":{"job_name":"nightly"}}'


def subscriptions(count: int) -> list[Subscription]:
    return [
        Subscription(
            subscription_id=f"sub_{n:026d}",
            tenant_id="acme",
            url=f"https://example.com/hook/{n}",
            event_types=(EventType.JOB_COMPLETED,),
            created_at=AT,
            updated_at=AT,
            data_key=b"",
        )
        for n in range(count)
    ]


def floor_round_seconds(floor: Callable[[], object]) -> float:
    """`bench/core.py`'s floor, once for each of EVENTS failed events."""
    start = time.perf_counter()
    for _ in range(EVENTS):
        floor()
    return time.perf_counter() - start


def round_seconds(event_ids: list[str], matched: list[Subscription]) -> float:
    start = time.perf_counter()
    for event_id in event_ids:
        delivery_tasks_for(
            event_id=event_id,
            tenant_id="acme",
            event_type="fetcher.job.completed",
            payload=PAYLOAD,
            subscriptions=matched,
            job_name="nightly",
        )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=41)
    args = parser.parse_args()
    event_ids = [f"fetcher.job.completed.{uuid.UUID(int=n + 1)}" for n in range(EVENTS)]
    floor = core.pipeline_and_floor("failed")[1]["floor"]
    print(f"{EVENTS} distinct events a round, {args.rounds} rounds")
    print("subscriptions  us/event (min, median)  us/task (min)  x floor (min)")
    for count in args.subscriptions:
        matched = subscriptions(count)
        round_seconds(event_ids, matched)  # warm-up: imports, pydantic's validator, caches
        rounds, floors = [], []
        for _ in range(args.rounds):  # alternating, so that load hits both alike
            rounds.append(round_seconds(event_ids, matched) / EVENTS * 1e6)
            floors.append(floor_round_seconds(floor) / EVENTS * 1e6)
        best = min(rounds)
        print(
            f"{count:13d}  {best:8.1f} {statistics.median(rounds):8.1f}  {best / count:13.1f}"
            f"  {best / min(floors):12.1f}x"
        )
    print(f"(floor: {min(floors):.1f} us a message, the fastest round)")


if __name__ == "__main__":
    main()
