"""The access table (`AccessTable`; docs/architecture.md): grants, used links, revocations.

One DynamoDB table, key `pk` + `sk`, TTL attribute `expires_at` (always checked in code too:
TTL deletes lazily). Items, as `pk` / `sk`:

- `grant` / the grant id: a grant (`principal_pattern`, `tenants`, `description`,
  `created_at`, `created_by`);
- `tenant#<tenant id>` / `revocation`: the tenant's revocation `epoch` (N): links and sessions
  issued under an older epoch are over;
- `link#<link id>` / `used`: a link that was opened (one-time use: the conditional put is the
  consumption);
- `session#<session id>` / `revoked`: a session ended early (`portal revoke --session`, or its
  owner signed out);
- `tenant#<tenant id>` / `sends#<window start>`: how many replays and test sends the tenant's
  own callers made in that minute (`count`), expiring with it (`take_send`).

Grants share one partition, so listing them is one `Query` (the API reads them on every IAM
request to tell tenant-bound callers from operators; `MAX_GRANTS` keeps that one page).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from jobhooks.access.exceptions import (
    GrantNotFoundError,
    LinkAlreadyUsedError,
    TooManyGrantsError,
)
from jobhooks.storage.conditions import is_condition_failure
from jobhooks.storage.reads import every_item
from jobhooks.storage.times import format_time

GRANT_PARTITION: Final = "grant"
REVOCATION: Final = "revocation"
USED: Final = "used"
REVOKED: Final = "revoked"
SENDS: Final = "sends"
MAX_GRANTS: Final = 100
_BATCH_GET_ATTEMPTS: Final = 4


@dataclass(frozen=True, slots=True)
class StoredGrant:
    """A grant as the access table holds it: an IAM principal pattern bound to tenants."""

    grant_id: str
    principal_pattern: str
    tenants: tuple[str, ...]
    description: str
    created_at: str
    created_by: str


@dataclass(frozen=True, slots=True)
class SessionState:
    """What the access table says about one session (or link) of a tenant."""

    epoch: int
    revoked: bool


def stored_time(moment: datetime) -> str:
    return format_time(moment)


class AccessStore:
    def __init__(
        self,
        table_name: str,
        dynamodb: Any,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.table_name = table_name
        self._dynamodb = dynamodb
        self._clock = clock
        self._sleep = sleep

    # -- grants ------------------------------------------------------------------------------

    def list_grants(self) -> list[StoredGrant]:
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "#pk = :grant",
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": {":grant": {"S": GRANT_PARTITION}},
            # A grant removed a moment ago must not still bind (or free) its caller.
            "ConsistentRead": True,
        }
        return [_grant(item) for item in every_item(self._dynamodb.query, arguments)]

    def add_grant(self, grant: StoredGrant) -> None:
        if len(self.list_grants()) >= MAX_GRANTS:
            raise TooManyGrantsError(MAX_GRANTS)
        item: dict[str, Any] = {
            "pk": {"S": GRANT_PARTITION},
            "sk": {"S": grant.grant_id},
            "principal_pattern": {"S": grant.principal_pattern},
            "tenants": {"L": [{"S": tenant} for tenant in grant.tenants]},
            "created_at": {"S": grant.created_at},
            "created_by": {"S": grant.created_by},
        }
        if grant.description:
            item["description"] = {"S": grant.description}
        self._dynamodb.put_item(
            TableName=self.table_name,
            Item=item,
            ConditionExpression="attribute_not_exists(#pk)",
            ExpressionAttributeNames={"#pk": "pk"},
        )

    def remove_grant(self, grant_id: str) -> StoredGrant:
        try:
            answer = self._dynamodb.delete_item(
                TableName=self.table_name,
                Key=_key(GRANT_PARTITION, grant_id),
                ConditionExpression="attribute_exists(#pk)",
                ExpressionAttributeNames={"#pk": "pk"},
                ReturnValues="ALL_OLD",
            )
        except Exception as error:
            if is_condition_failure(error):
                raise GrantNotFoundError(grant_id) from None
            raise
        return _grant(answer["Attributes"])

    # -- revocation --------------------------------------------------------------------------

    def revocation_epoch(self, tenant_id: str) -> int:
        item = self._dynamodb.get_item(
            TableName=self.table_name,
            Key=_key(_tenant_partition(tenant_id), REVOCATION),
            ConsistentRead=True,
        ).get("Item")
        return int(item["epoch"]["N"]) if item else 0

    def revoke_tenant(self, tenant_id: str) -> int:
        """Move the tenant to a new epoch: every link and session issued before is over."""
        answer = self._dynamodb.update_item(
            TableName=self.table_name,
            Key=_key(_tenant_partition(tenant_id), REVOCATION),
            UpdateExpression="ADD #epoch :one SET #tenant = :tenant, #at = :at",
            ExpressionAttributeNames={
                "#epoch": "epoch",
                "#tenant": "tenant_id",
                "#at": "revoked_at",
            },
            ExpressionAttributeValues={
                ":one": {"N": "1"},
                ":tenant": {"S": tenant_id},
                ":at": {"S": stored_time(self._clock())},
            },
            ReturnValues="UPDATED_NEW",
        )
        return int(answer["Attributes"]["epoch"]["N"])

    def revoke_session(self, session_id: str, *, tenant_id: str | None, until: int) -> None:
        """Mark the session ended; `until` (Unix seconds) is when it would have expired anyway."""
        item: dict[str, Any] = {
            **_key(_session_partition(session_id), REVOKED),
            "revoked_at": {"S": stored_time(self._clock())},
            "expires_at": {"N": str(until)},
        }
        if tenant_id:
            item["tenant_id"] = {"S": tenant_id}
        self._dynamodb.put_item(TableName=self.table_name, Item=item)

    # -- the tenants' send budget ------------------------------------------------------------

    def take_send(self, tenant_id: str, *, limit: int, window_seconds: int) -> int | None:
        """Count one replay or test send of `tenant_id` in the current window: None when it is
        within `limit`, else the seconds until the window ends. One conditional UpdateItem, so
        the count holds across every instance of the function."""
        now = int(self._clock().timestamp())
        start = now - now % window_seconds
        try:
            self._dynamodb.update_item(
                TableName=self.table_name,
                Key=_key(_tenant_partition(tenant_id), f"{SENDS}#{start}"),
                UpdateExpression="ADD #count :one SET #expires = :expires",
                ConditionExpression="attribute_not_exists(#count) OR #count < :limit",
                ExpressionAttributeNames={"#count": "count", "#expires": "expires_at"},
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":limit": {"N": str(limit)},
                    ":expires": {"N": str(start + 2 * window_seconds)},
                },
            )
        except Exception as error:
            if is_condition_failure(error):
                return max(1, start + window_seconds - now)
            raise
        return None

    # -- links and sessions ------------------------------------------------------------------

    def consume_link(
        self, link_id: str, *, tenant_id: str, session_id: str, expires_at: int
    ) -> None:
        """Record the link's one use; `LinkAlreadyUsedError` when it was used before."""
        try:
            self._dynamodb.put_item(
                TableName=self.table_name,
                Item={
                    **_key(_link_partition(link_id), USED),
                    "tenant_id": {"S": tenant_id},
                    "session_id": {"S": session_id},
                    "used_at": {"S": stored_time(self._clock())},
                    # Kept until the link would have expired: after that its MAC alone refuses it.
                    "expires_at": {"N": str(expires_at)},
                },
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": "pk"},
            )
        except Exception as error:
            if is_condition_failure(error):
                raise LinkAlreadyUsedError() from None
            raise

    def session_state(self, tenant_id: str, session_id: str | None = None) -> SessionState:
        """The tenant's epoch and whether `session_id` was revoked: one strongly consistent
        BatchGetItem (the authorizer's only read per request)."""
        keys = [_key(_tenant_partition(tenant_id), REVOCATION)]
        if session_id is not None:
            keys.append(_key(_session_partition(session_id), REVOKED))
        found = self._batch_get(keys)
        epoch_item = found.get((_tenant_partition(tenant_id), REVOCATION))
        revoked = session_id is not None and (_session_partition(session_id), REVOKED) in found
        return SessionState(
            epoch=int(epoch_item["epoch"]["N"]) if epoch_item else 0, revoked=revoked
        )

    def _batch_get(
        self, keys: Sequence[Mapping[str, Any]]
    ) -> dict[tuple[str, str], Mapping[str, Any]]:
        found: dict[tuple[str, str], Mapping[str, Any]] = {}
        request: dict[str, Any] = {self.table_name: {"Keys": list(keys), "ConsistentRead": True}}
        for attempt in range(_BATCH_GET_ATTEMPTS):
            answer = self._dynamodb.batch_get_item(RequestItems=request)
            for item in answer.get("Responses", {}).get(self.table_name, []):
                found[(item["pk"]["S"], item["sk"]["S"])] = item
            request = answer.get("UnprocessedKeys") or {}
            if not request:
                return found
            self._sleep(0.05 * 2**attempt)
        from botocore.exceptions import ClientError  # loaded with the client that answered

        raise ClientError(
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "retry"}},
            "BatchGetItem",
        )


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _tenant_partition(tenant_id: str) -> str:
    return f"tenant#{tenant_id}"


def _link_partition(link_id: str) -> str:
    return f"link#{link_id}"


def _session_partition(session_id: str) -> str:
    return f"session#{session_id}"


def _grant(item: Mapping[str, Any]) -> StoredGrant:
    return StoredGrant(
        grant_id=item["sk"]["S"],
        principal_pattern=item["principal_pattern"]["S"],
        tenants=tuple(value["S"] for value in item.get("tenants", {}).get("L", [])),
        description=item.get("description", {}).get("S", ""),
        created_at=item.get("created_at", {}).get("S", ""),
        created_by=item.get("created_by", {}).get("S", ""),
    )
