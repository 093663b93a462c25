"""Who makes AWS calls in the local stack, and under which policy.

Each function of template.yaml acts as its `Role`: the role's inline policies, the template's
managed policies it lists in ManagedPolicyArns, and the template's AWS::IAM::Policy and
AWS::IAM::ManagedPolicy resources that name it in `Roles`, all resolved against the local
resources by `jobhooks_tools.local.template.provision` (so a grant changed in the template
changes what the local stack allows). The shovel acts under the policy deploy/ documents for it
(`deploy/shovel/iam-policy.json`), with the local ingest queue's ARN filled in.

A principal is recognised by its code: a call made while a frame of a function's CodeUri (or of
the shovel's package) is on the stack is that principal's call (`guard.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jobhooks_tools.local.iam.policy import Policy

SHOVEL: Final = "Shovel"
SHOVEL_POLICY_FILE: Final = Path("deploy/shovel/iam-policy.json")
# The file's placeholders and the template resources whose local ARNs replace them.
SHOVEL_POLICY_VARIABLES: Final = {"INGEST_QUEUE_ARN": "IngestQueue"}


@dataclass(frozen=True)
class Principal:
    """A caller of the local stack: a function (by logical id) or the shovel."""

    name: str
    # Where its grants are written: `IngestRole`, `deploy/shovel/iam-policy.json`.
    policy_source: str
    arn: str
    account: str
    region: str
    policy: Policy
    # Absolute directories whose code acts as this principal.
    code: tuple[str, ...]


def shovel_principal(
    repository: Path, arns: Mapping[str, str], account: str, region: str
) -> Principal | None:
    """The shovel under deploy/'s policy, or None when the checkout has no such file."""
    path = repository / SHOVEL_POLICY_FILE
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    for variable, logical_id in SHOVEL_POLICY_VARIABLES.items():
        text = text.replace("${" + variable + "}", arns[logical_id])
    document = json.loads(text)
    import jobhooks_tools.shovel as shovel_package

    source = str(SHOVEL_POLICY_FILE)
    return Principal(
        name=SHOVEL,
        policy_source=source,
        arn=f"arn:aws:iam::{account}:user/jobhooks-shovel",
        account=account,
        region=region,
        policy=Policy.parse(
            source,
            [document],
            lambda arn: next((k for k, v in arns.items() if v == arn), arn),
        ),
        code=(str(Path(shovel_package.__file__).resolve().parent),),
    )


def role_documents(
    role: str, resources: Mapping[str, Any], resolve: Any
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The policy documents that apply to the template role `role`, resolved with `resolve`,
    and the managed policy ARNs it names that are not in the template (AWS managed policies,
    which the local evaluator cannot read)."""
    properties = resources[role].get("Properties") or {}
    documents: list[Mapping[str, Any]] = [
        resolve(policy["PolicyDocument"]) for policy in properties.get("Policies") or []
    ]
    outside: list[str] = []
    for reference in properties.get("ManagedPolicyArns") or []:
        if isinstance(reference, dict) and "Ref" in reference and reference["Ref"] in resources:
            documents.append(resolve(resources[reference["Ref"]]["Properties"]["PolicyDocument"]))
        else:
            outside.append(str(resolve(reference)))
    for resource in resources.values():
        if resource.get("Type") not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            continue
        attached: Sequence[Any] = (resource.get("Properties") or {}).get("Roles") or []
        if any(isinstance(r, dict) and r.get("Ref") == role for r in attached):
            documents.append(resolve(resource["Properties"]["PolicyDocument"]))
    return documents, outside
