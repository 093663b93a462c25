"""`python -m jobhooks_tools.local.aws_limits ARGS`: the `jobhooks` CLI with AWS's limits enforced.

The local stack starts its shovel process this way, so the shovel's SendMessageBatch calls are
held to SQS's real limits as the in-process parts are.
"""

from __future__ import annotations

import sys

from jobhooks_tools.cli.main import main
from jobhooks_tools.local.aws_limits import install

install()
sys.exit(main())
