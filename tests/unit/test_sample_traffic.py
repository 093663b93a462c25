"""What `jobhooks publish-sample` (and `jobhooks dev --demo`, and the benches) publish."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from jobhooks_tools.publisher import sample_traffic
from jobhooks_tools.sample_events import demo_key


def test_a_completed_sample_is_completed_when_it_was_emitted() -> None:
    # So that its outcome, and its analytics row, fall in the window of the day it was sent.
    (completed, failed) = sample_traffic(demo_key(), count=2)

    body = json.loads(completed.event.body)
    signed_at = datetime.fromtimestamp(int(str(completed.event.headers["t"])), UTC)
    assert datetime.fromisoformat(body["completedAt"]) == signed_at
    assert body["jobId"] == completed.event_id.removeprefix("fetcher.job.completed.")
    assert "completedAt" not in json.loads(failed.event.body)
