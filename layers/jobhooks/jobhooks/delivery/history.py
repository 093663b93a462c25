"""A delivery's history, wherever it is kept: in a first-attempt page or in the attempt log.

Ingest makes the first attempt of every delivery (`jobhooks.delivery.first_attempt`). One that
succeeded has no attempt-log record: it is an entry in the page of its subscription and its
ingest batch (`first_attempts`). Every other delivery (a failed first attempt and its retries,
a replay, a delivery made before first attempts) is a record of the attempt log
(`attempt_log`). The management API, the CLI and the portal read deliveries here, and see
records either way:

- **by id.** The id names the event and the subscription (`parse_delivery_id`), the event's
  claim names the batch (`batch_id`), the batch's page holds the attempt. The claim is kept at
  least as long as the page (`jobhooks.ingest.claim_retention`).
- **both.** A first-attempt success that was later POSTed again (a replay, a re-fan-out) has a
  page entry and a record: it is one delivery, the record, with the page's attempt first (and
  counted), created when the page's batch was.
- **per subscription.** The `by_subscription` index and the subscription's pages, merged in one
  order: newest `created_at` first, then greatest delivery id (a page's entries share its
  batch's time). A cursor names the place of the page's last delivery in that order, so the next
  page starts right after it, whichever store it comes from and however many deliveries share
  its time. It is the cursor the index listing handed out before pages existed (the last
  delivery's id and time, bound to the subscription): those keep working.
- **per event.** One delivery per subscription its claim records, by subscription id (the
  cursor names the last subscription, as before). A delivery recorded before ids named their
  event has the older, hashed id (`legacy_delivery_id_for`): both ids are read, and a record
  under either is the subscription's delivery (under both, the newer id's).

What reads cost: a listing reads a subscription's pages newest first, and the records of their
entries with one BatchGetItem per batch time. A record listed per subscription is checked for a
page entry (its claim, then its page: a record is a failure or a replay, so few are listed);
each claim and page is read once per request.

A page whose event was claimed again later (ingest wrote the page, then failed before
completing, and a retry POSTed the event again under a new batch) is not the event's page: its
claim names the retry's. `get` and the event listing read only the claim's page; a subscription
listing, which reads pages without claims, may show such a delivery once per page.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final, Protocol

from jobhooks.delivery.attempt_log import BY_SUBSCRIPTION_INDEX, AttemptLog
from jobhooks.delivery.exceptions import DeliveryNotFoundError
from jobhooks.delivery.first_attempts import FirstAttemptLog, batch_time
from jobhooks.delivery.model import DeliveryRecord
from jobhooks.delivery.stored_page import StoredPage
from jobhooks.delivery_task import (
    DELIVERY_ID_PATTERN,
    delivery_id_for,
    legacy_delivery_id_for,
    parse_delivery_id,
)
from jobhooks.storage.claimed_event import ClaimedEvent
from jobhooks.storage.cursors import decode_cursor, encode_cursor, shaped, stored_time
from jobhooks.storage.exceptions import InvalidCursorError
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE, check_page_size, cut_page
from jobhooks.storage.reads import MAX_BATCH_GET_KEYS
from jobhooks.storage.times import format_time, parse_time, to_stored_precision
from jobhooks.subscriptions.model import SUBSCRIPTION_ID_PATTERN

if TYPE_CHECKING:
    from jobhooks.delivery.pages import DeliveryPage

# The listing an event's cursors name (once an index's name; cursors stay valid across it).
BY_EVENT_LISTING: Final = "by_event"
# Cursors are bound to the subscription or event whose deliveries they page through.
CURSOR_SCOPE: Final = "for this subscription or event"
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND: Final = timedelta(milliseconds=1)
_DELIVERY_ID: Final = shaped(DELIVERY_ID_PATTERN)
_SUBSCRIPTION_ID: Final = shaped(SUBSCRIPTION_ID_PATTERN)

# A delivery's place in a subscription's listing: (created_at, delivery_id), greatest first.
Place = tuple[datetime, str]


class ClaimReader(Protocol):
    """Reads an event's claim (`jobhooks.storage.claim_reader.ClaimReader`): its batch, its
    fan-out."""

    def get(self, event_id: str) -> ClaimedEvent | None: ...


class ClaimsReader(ClaimReader, Protocol):
    """Reads several claims at once too (the deliver function's batch)."""

    def get_many(self, event_ids: Iterable[str]) -> dict[str, ClaimedEvent]: ...


class PageReader(Protocol):
    """Reads one first-attempt page (`FirstAttemptLog` implements it)."""

    def get(self, subscription_id: str, batch_id: str) -> StoredPage | None: ...


class PagesReader(PageReader, Protocol):
    """Reads several pages at once too (the deliver function's batch)."""

    def get_many(self, pages: Iterable[tuple[str, str]]) -> dict[tuple[str, str], StoredPage]: ...


class DeliveryHistory:
    """The management side's reads of deliveries (module docstring)."""

    def __init__(
        self, attempt_log: AttemptLog, first_attempts: FirstAttemptLog, claims: ClaimReader
    ) -> None:
        self._attempt_log = attempt_log
        self._first_attempts = first_attempts
        self._claims = claims

    def get(self, delivery_id: str, *, tenant_id: str | None = None) -> DeliveryRecord:
        """The delivery with its attempts; with `tenant_id`, another tenant's is "not found"."""
        reads = _Reads(self._claims, self._first_attempts)
        try:
            record: DeliveryRecord | None = self._attempt_log.get(delivery_id)
        except DeliveryNotFoundError:
            record = None
        delivery = whole_delivery(reads.first_attempt(delivery_id), record)
        if delivery is None or (tenant_id is not None and delivery.tenant_id != tenant_id):
            raise DeliveryNotFoundError(delivery_id)
        return delivery

    def list_by_event(
        self,
        event_id: str,
        *,
        subscription_ids: Iterable[str],
        tenant_id: str | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> DeliveryPage:
        """One page of an event's deliveries, one per subscription, by subscription id.

        `subscription_ids` are the subscriptions the event went to (its claim records them). A
        subscription with nothing kept (not delivered yet, or expired) is not listed.
        """
        check_page_size(limit)
        after = None
        if cursor:
            bound = {"i": BY_EVENT_LISTING, "p": event_id}
            fields = {"d": _DELIVERY_ID, "s": _SUBSCRIPTION_ID}
            document = decode_cursor(cursor, bound=bound, fields=fields, scope=CURSOR_SCOPE)
            after = document["s"]
        remaining = sorted({s for s in subscription_ids if after is None or s > after})
        reads = _Reads(self._claims, self._first_attempts)
        found: list[DeliveryRecord] = []
        # One more than asked, so the last page says so instead of handing out a dead cursor.
        while remaining and len(found) <= limit:
            # Two keys a subscription (its id and its legacy id) in one BatchGetItem.
            size = min(MAX_BATCH_GET_KEYS // 2, limit + 1 - len(found))
            chunk, remaining = remaining[:size], remaining[size:]
            ids = {delivery_id_for(event_id, s): s for s in chunk}
            legacy_ids = {s: legacy_delivery_id_for(event_id, s) for s in chunk}
            records = self._attempt_log.get_many([*ids, *legacy_ids.values()])
            for delivery_id, subscription in ids.items():
                record = records.get(delivery_id) or records.get(legacy_ids[subscription])
                delivery = whole_delivery(reads.first_attempt(delivery_id, subscription), record)
                if delivery is None:
                    continue
                if tenant_id is not None and delivery.tenant_id != tenant_id:
                    continue
                found.append(delivery)
        page, next_cursor = cut_page(
            found,
            limit,
            lambda last: encode_cursor(
                {
                    "i": BY_EVENT_LISTING,
                    "p": event_id,
                    "d": last.delivery_id,
                    "s": last.subscription_id,
                }
            ),
        )
        from jobhooks.delivery.pages import DeliveryPage  # the management reads' only

        return DeliveryPage(page, next_cursor)

    def list_by_subscription(
        self,
        subscription_id: str,
        *,
        tenant_id: str | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> DeliveryPage:
        """One page of a subscription's deliveries, newest first (module docstring)."""
        check_page_size(limit)
        after = _subscription_place(cursor, subscription_id) if cursor else None
        reads = _Reads(self._claims, self._first_attempts)
        # One more than asked, so the last page says so instead of handing out a dead cursor.
        wanted = limit + 1
        merged = heapq.merge(
            self._records(subscription_id, after, tenant_id, wanted, reads),
            self._first_attempt_entries(subscription_id, after, tenant_id, wanted, reads),
            key=place_of,
            reverse=True,
        )
        found = list(itertools.islice(merged, wanted))
        page, next_cursor = cut_page(
            found,
            limit,
            lambda last: encode_cursor(
                {
                    "i": BY_SUBSCRIPTION_INDEX,
                    "p": subscription_id,
                    "d": last.delivery_id,
                    "s": format_time(last.created_at),
                }
            ),
        )
        from jobhooks.delivery.pages import DeliveryPage  # the management reads' only

        return DeliveryPage(page, next_cursor)

    # -- the two sources of a subscription's listing, each in listing order --------------------

    def _records(
        self,
        subscription_id: str,
        after: Place | None,
        tenant_id: str | None,
        batch: int,
        reads: _Reads,
    ) -> Iterator[DeliveryRecord]:
        """The attempt log's deliveries after `after`, but those a page holds the first attempt
        of: they are listed at the page's place (`_first_attempt_entries`)."""
        records = self._attempt_log.newest_by_subscription(
            subscription_id, created_at_most=after[0] if after else None, batch=batch
        )
        for record in _in_listing_order(records):
            if after is not None and place_of(record) >= after:
                continue
            if tenant_id is not None and record.tenant_id != tenant_id:
                continue
            if reads.first_attempt(record.delivery_id, record.subscription_id) is not None:
                continue
            yield record

    def _first_attempt_entries(
        self,
        subscription_id: str,
        after: Place | None,
        tenant_id: str | None,
        batch: int,
        reads: _Reads,
    ) -> Iterator[DeliveryRecord]:
        """The pages' deliveries after `after`, each with its record when it has one."""
        before_batch = _batch_ids_until(after[0]) if after else None
        pages = self._pages(subscription_id, before_batch, batch)
        for _, same_time in itertools.groupby(pages, key=lambda stored: stored.page.created_at):
            entries: list[tuple[StoredPage, DeliveryRecord]] = []
            for stored in same_time:
                reads.remember(stored)
                if tenant_id is not None and stored.page.tenant_id != tenant_id:
                    continue
                entries.extend((stored, first) for first in stored.records())
            entries = [entry for entry in entries if after is None or place_of(entry[1]) < after]
            entries.sort(key=lambda entry: entry[1].delivery_id, reverse=True)
            records = self._attempt_log.get_many(first.delivery_id for _, first in entries)
            for stored, first in entries:
                record = records.get(first.delivery_id)
                if record is None:
                    yield first
                elif reads.is_claimed_page(stored, first.event_id):
                    yield whole_delivery(first, record) or first
                # else: an earlier claim's page; the record is listed at its own place.

    def _pages(
        self, subscription_id: str, before_batch: str | None, batch: int
    ) -> Iterator[StoredPage]:
        while True:
            pages = self._first_attempts.newest(
                subscription_id, before_batch=before_batch, limit=batch
            )
            # Pages are written under time-ordered batch ids only (`new_batch_id`).
            yield from (stored for stored in pages if batch_time(stored.page.batch_id))
            if len(pages) < batch:
                return
            before_batch = pages[-1].page.batch_id


class _Reads:
    """The claims and pages one request has read: each is read at most once."""

    def __init__(self, claims: ClaimReader, first_attempts: PageReader) -> None:
        self.claims = _CachedClaims(claims)
        self.pages = _CachedPages(first_attempts)

    def remember(self, stored: StoredPage) -> None:
        self.pages.remember(stored)

    def first_attempt(
        self, delivery_id: str, subscription_id: str | None = None
    ) -> DeliveryRecord | None:
        """The delivery's first attempt as its page keeps it, if it succeeded and is kept.

        `subscription_id`, when the caller knows it; otherwise the event's claim lists the
        subscriptions, and the id's tag says which.
        """
        named = parse_delivery_id(delivery_id)
        if named is None:
            return None  # an id from before ids named their event: a record, never a page
        event_id = named.event_id
        if subscription_id is not None:
            candidates: tuple[str, ...] = (subscription_id,)
        else:
            claim = self.claims.get(event_id)
            candidates = (claim.subscription_ids or ()) if claim is not None else ()
        # `parse_delivery_id` checked the event part: a matching tag is the whole id.
        subscription_id = next((s for s in candidates if named.is_for(s)), None)
        if subscription_id is None:
            return None
        return first_attempt_success(
            event_id, subscription_id, claims=self.claims, pages=self.pages
        )

    def is_claimed_page(self, stored: StoredPage, event_id: str) -> bool:
        """Whether `stored` is the page of the batch the event's claim names."""
        claim = self.claims.get(event_id)
        return claim is not None and claim.batch_id == stored.page.batch_id


class _CachedClaims:
    def __init__(self, claims: ClaimReader) -> None:
        self._claims = claims
        self._claim_of: dict[str, ClaimedEvent | None] = {}

    def get(self, event_id: str) -> ClaimedEvent | None:
        if event_id not in self._claim_of:
            self._claim_of[event_id] = self._claims.get(event_id)
        return self._claim_of[event_id]


class _CachedPages:
    def __init__(self, pages: PageReader) -> None:
        self._pages = pages
        self._page_of: dict[tuple[str, str], StoredPage | None] = {}

    def get(self, subscription_id: str, batch_id: str) -> StoredPage | None:
        key = (subscription_id, batch_id)
        if key not in self._page_of:
            self._page_of[key] = self._pages.get(subscription_id, batch_id)
        return self._page_of[key]

    def remember(self, stored: StoredPage) -> None:
        self._page_of[(stored.page.subscription_id, stored.page.batch_id)] = stored


def first_attempt_success(
    event_id: str, subscription_id: str, *, claims: ClaimReader, pages: PageReader
) -> DeliveryRecord | None:
    """The delivery's first attempt as the page of its event's batch keeps it, if ingest made it
    and it succeeded: the event's claim names the batch (`batch_id`), the (subscription, batch)
    page holds the success. Two reads; None when either is gone (expired) or holds nothing."""
    claim = claims.get(event_id)
    if claim is None or claim.batch_id is None or batch_time(claim.batch_id) is None:
        return None  # no claim kept, or one made before first attempts
    stored = pages.get(subscription_id, claim.batch_id)
    success = stored.page.find(event_id) if stored is not None else None
    if stored is None or success is None:
        return None
    return stored.record(success)


class FirstAttemptSuccesses:
    """The deliver function's view of the pages (`ports.FirstAttemptRecords`): whether ingest's
    first attempt of a delivery succeeded, for a task the attempt log has no record of."""

    def __init__(self, claims: ClaimsReader, first_attempts: PagesReader) -> None:
        self._claims = claims
        self._pages = first_attempts

    def find(self, event_id: str, subscription_id: str) -> DeliveryRecord | None:
        return first_attempt_success(
            event_id, subscription_id, claims=self._claims, pages=self._pages
        )

    def find_many(
        self, deliveries: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], DeliveryRecord]:
        """`find` for several (event, subscription) deliveries in two reads, whatever their
        number: the events' claims (one BatchGetItem), then the pages they name (another)."""
        wanted = sorted(set(deliveries))
        claims = self._claims.get_many(event_id for event_id, _ in wanted)
        page_of: dict[tuple[str, str], tuple[str, str]] = {}
        for event_id, subscription_id in wanted:
            claim = claims.get(event_id)
            if claim is not None and claim.batch_id and batch_time(claim.batch_id) is not None:
                page_of[(event_id, subscription_id)] = (subscription_id, claim.batch_id)
        pages = self._pages.get_many(page_of.values()) if page_of else {}
        found: dict[tuple[str, str], DeliveryRecord] = {}
        for (event_id, subscription_id), key in page_of.items():
            stored = pages.get(key)
            success = stored.page.find(event_id) if stored is not None else None
            if stored is not None and success is not None:
                found[(event_id, subscription_id)] = stored.record(success)
        return found


def whole_delivery(
    first: DeliveryRecord | None, record: DeliveryRecord | None
) -> DeliveryRecord | None:
    """One delivery from its first-attempt entry and its attempt-log record, either or both.

    With both, the record (its status, its later attempts) with the page's attempt first: the
    delivery began when the page's batch did.
    """
    if first is None or record is None:
        return first or record
    return record.model_copy(
        update={
            "attempts": (*first.attempts, *record.attempts),
            "attempt_count": record.attempt_count + first.attempt_count,
            "created_at": first.created_at,
            "succeeded_at": record.succeeded_at or first.succeeded_at,
        }
    )


def place_of(record: DeliveryRecord) -> Place:
    return record.created_at, record.delivery_id


def _in_listing_order(records: Iterable[DeliveryRecord]) -> Iterator[DeliveryRecord]:
    """Records newest first by `created_at` (the index's order) into listing order: the index
    leaves deliveries of the same millisecond in no given order; the listing sorts them by id."""
    for _, same_time in itertools.groupby(records, key=lambda record: record.created_at):
        yield from sorted(same_time, key=lambda record: record.delivery_id, reverse=True)


def _batch_ids_until(moment: datetime) -> str:
    """The bound below which batch ids (`<13-digit epoch ms>-...`) began at `moment` or before."""
    millis = (to_stored_precision(moment) - _EPOCH) // _MILLISECOND
    return f"{millis + 1:013d}"


def _subscription_place(cursor: str, subscription_id: str) -> Place:
    document = decode_cursor(
        cursor,
        bound={"i": BY_SUBSCRIPTION_INDEX, "p": subscription_id},
        fields={"d": _DELIVERY_ID, "s": stored_time},
        scope=CURSOR_SCOPE,
    )
    try:
        created_at = parse_time(document["s"])
    except ValueError:
        raise InvalidCursorError(CURSOR_SCOPE) from None
    if created_at.tzinfo is None:
        raise InvalidCursorError(CURSOR_SCOPE)
    return created_at.astimezone(UTC), document["d"]
