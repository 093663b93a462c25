"""IAM enforced where the functions run off AWS: each call as the function's template role.

moto enforces no IAM by default, so a grant missing from template.yaml (a function reading a
table its role may not read) would pass every local test and fail on AWS with AccessDenied. This
guard closes that gap: a botocore hook (`guard.py`) works out which principal is calling (the
function whose code is running, or the shovel), what IAM would authorize for the call
(`requests.py`: action, resource ARN, condition keys) and whether the principal's policy allows it
(`policy.py`: IAM's evaluation logic, failing closed on what it cannot judge). The policies are
template.yaml's own roles resolved against the local resources (`principals.py`, built by
`jobhooks_tools.local.template.provision`), never a copy.

The test suite (tests/fixtures/aws.py) and the local stack (`jobhooks dev`, `DevStack`) install
it; Lambda code never imports it. docs/iam-local.md explains the rules and the grants report.
"""

from __future__ import annotations

from jobhooks_tools.local.iam.guard import (
    acting_as,
    check,
    current_principal,
    exercised_grants,
    install,
    is_installed,
    known_grants,
    principal_of_code,
    take_refusals,
    uninstall,
    use,
)
from jobhooks_tools.local.iam.policy import Grant, Policy, Request, evaluate
from jobhooks_tools.local.iam.principals import Principal
from jobhooks_tools.local.iam.refusals import AccessDenied, Refusal

__all__ = [
    "AccessDenied",
    "Grant",
    "Policy",
    "Principal",
    "Refusal",
    "Request",
    "acting_as",
    "check",
    "current_principal",
    "evaluate",
    "exercised_grants",
    "install",
    "is_installed",
    "known_grants",
    "principal_of_code",
    "take_refusals",
    "uninstall",
    "use",
]
