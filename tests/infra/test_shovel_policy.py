"""The shovel's policy is written twice: as the stack's ShovelPolicy and, for a shovel outside
CloudFormation, as deploy/shovel/iam-policy.json, which the local stack also enforces on the shovel
(docs/iam-local.md). They must grant the same."""

from __future__ import annotations

import json
from pathlib import Path

from jobhooks_tools.local.iam.principals import SHOVEL_POLICY_FILE, SHOVEL_POLICY_VARIABLES
from jobhooks_tools.local.template import load_template

ROOT = Path(__file__).resolve().parents[2]


def test_deploys_shovel_policy_grants_what_the_stacks_shovel_policy_grants() -> None:
    stack = load_template(ROOT / "template.yaml")["Resources"]["ShovelPolicy"]["Properties"]
    text = (ROOT / SHOVEL_POLICY_FILE).read_text(encoding="utf-8")
    for variable, logical_id in SHOVEL_POLICY_VARIABLES.items():
        text = text.replace(f'"${{{variable}}}"', json.dumps({"Fn::GetAtt": [logical_id, "Arn"]}))
    assert json.loads(text) == stack["PolicyDocument"]
