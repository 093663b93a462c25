"""`jobhooks dev` shows each notification as one console line (what the operators' topic gets)."""

from __future__ import annotations

import logging

from jobhooks_tools.local.activity import describe


def test_a_sent_notification_is_one_notify_line() -> None:
    record = logging.LogRecord(
        "jobhooks.notifications", logging.INFO, "", 0, "notification sent", (), None
    )
    record.__dict__.update(
        {
            "notification_type": "job_health.degraded",
            "tenant_id": "acme",
            "deliveries": 2,
            "about_subscription_id": None,
            "published": True,
        }
    )
    activity = describe(record)
    assert activity is not None
    assert (activity.source, activity.what) == ("notify", "job_health.degraded")
    assert activity.text == "acme: 2 deliveries, operators' topic"
