"""`python -m jobhooks_tools.local.iam ARGS`: the `jobhooks` CLI under AWS's limits and the shovel's
IAM policy (deploy/shovel/iam-policy.json, with $JOBHOOKS_LOCAL_SHOVEL_QUEUE_ARN as the ingest
queue's ARN).

The local stack starts its shovel process this way, so the shovel's calls are held to what its
documented policy allows, as the in-process shovel's are.
"""

from __future__ import annotations

import os
import sys

from jobhooks_tools.cli.main import main
from jobhooks_tools.local import aws_limits
from jobhooks_tools.local.iam import guard
from jobhooks_tools.local.iam.principals import shovel_principal
from jobhooks_tools.local.template import find_template

QUEUE_ARN_VARIABLE = "JOBHOOKS_LOCAL_SHOVEL_QUEUE_ARN"

aws_limits.install()
guard.install()
queue_arn = os.environ.get(QUEUE_ARN_VARIABLE)
if queue_arn:
    _, _, _, region, account, _ = queue_arn.split(":", 5)
    shovel = shovel_principal(find_template().parent, {"IngestQueue": queue_arn}, account, region)
    if shovel is not None:
        guard.use([shovel])
sys.exit(main())
