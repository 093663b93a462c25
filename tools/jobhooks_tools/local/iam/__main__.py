"""`python -m jobhooks_tools.local.iam ARGS`: the `jobhooks` CLI under AWS's limits and the shovel's
IAM policy (deploy/shovel/iam-policy.json, with $JOBHOOKS_LOCAL_SHOVEL_QUEUE_ARN as the ingest
queue's ARN). With $JOBHOOKS_LOCAL_IAM_JOURNAL, the grants it exercised and the calls it refused
are written there for the parent (`DevStack`) to take in.

The local stack starts its shovel process this way, so the shovel's calls are held to what its
documented policy allows, as the in-process shovel's are.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from jobhooks_tools.cli.main import main
from jobhooks_tools.local import aws_limits
from jobhooks_tools.local.iam import guard
from jobhooks_tools.local.iam.principals import shovel_principal
from jobhooks_tools.local.template import find_template

QUEUE_ARN_VARIABLE = "JOBHOOKS_LOCAL_SHOVEL_QUEUE_ARN"
JOURNAL_VARIABLE = "JOBHOOKS_LOCAL_IAM_JOURNAL"

aws_limits.install()
guard.install()
queue_arn = os.environ.get(QUEUE_ARN_VARIABLE)
if queue_arn:
    _, _, _, region, account, _ = queue_arn.split(":", 5)
    shovel = shovel_principal(find_template().parent, {"IngestQueue": queue_arn}, account, region)
    if shovel is not None:
        guard.use([shovel])
if os.environ.get(JOURNAL_VARIABLE):
    guard.journal_to(Path(os.environ[JOURNAL_VARIABLE]))
sys.exit(main())
