"""Cost per message of the core: decode + verify + normalize, beside its floor.

    .venv/bin/python bench/core.py [--iterations 20000]

The floor, measured in the same run on the same bytes, is what no implementation can avoid:
one HMAC-SHA256 over the signed bytes plus one `json.loads` of the body. The figure is the
median over repeated rounds of the per-message time; the target is within 10x of the floor.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.outcome import webhook_payload
from jobhooks_tools.sample_events import demo_key, make_job_event

KEY = demo_key()
T = 1_783_965_852
AT = datetime.fromtimestamp(T + 1, UTC)
POLICY = VerificationPolicy(keys=[KEY])
ROUNDS = 15


def per_message_ns(
    pipeline: Callable[[], object], floor: Callable[[], object], iterations: int
) -> tuple[float, float]:
    """Median per-message time of each, in alternating rounds so that load hits both alike."""
    samples: dict[Callable[[], object], list[float]] = {pipeline: [], floor: []}
    for _ in range(ROUNDS):
        for work, times in samples.items():
            start = time.perf_counter_ns()
            for _ in range(iterations):
                work()
            times.append((time.perf_counter_ns() - start) / iterations)
    return statistics.median(samples[pipeline]), statistics.median(samples[floor])


def measure(status: str, iterations: int) -> tuple[float, float, int]:
    event = make_job_event(KEY, status=status, tenant_id="acme", timestamp=T)
    raw = event.forwarded(received_at="2026-07-13T18:04:12.001Z").to_json()
    # The floor hashes as many bytes as the canonical signed form: six header lines + body.
    signed_length = len(event.body) + 120

    def pipeline() -> object:
        return webhook_payload(read_forwarded_message(raw, POLICY, AT), release="fetcher@2.0.2")

    signed = b"x" * signed_length

    def floor() -> object:
        hmac.new(KEY.secret, signed, hashlib.sha256).hexdigest()
        return json.loads(event.body)

    pipeline()  # the outcome must be produced, not just timed
    pipeline_ns, floor_ns = per_message_ns(pipeline, floor, iterations)
    return pipeline_ns, floor_ns, len(raw)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000, help="messages per round")
    args = parser.parse_args()
    print(f"{'event':<10} {'SQS body':>9} {'pipeline':>11} {'floor':>9} {'ratio':>6}")
    for status in ("completed", "failed"):
        pipeline_ns, floor_ns, size = measure(status, args.iterations)
        print(
            f"{status:<10} {size:>7} B {pipeline_ns / 1000:>8.1f} us {floor_ns / 1000:>6.1f} us "
            f"{pipeline_ns / floor_ns:>5.1f}x"
        )
    print(f"(median of {ROUNDS} rounds x {args.iterations} messages; target: within 10x)")


if __name__ == "__main__":
    main()
