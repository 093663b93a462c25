"""Page sizes, and cutting a page with the cursor of the next one.

Every listing reads one item more than it was asked for: when that item exists the page gets a
`next_cursor`, and when it does not the last page says so, instead of handing out a cursor that
leads to an empty page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, TypeVar

from jobhooks.storage.exceptions import InvalidPageSizeError

DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 100

ItemT = TypeVar("ItemT")


def check_page_size(limit: object) -> int:
    """`limit` when it is a whole number from 1 to `MAX_PAGE_SIZE`; else `InvalidPageSizeError`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidPageSizeError(MAX_PAGE_SIZE)
    return limit


def cut_page(
    found: Sequence[ItemT], limit: int, cursor_after: Callable[[ItemT], str]
) -> tuple[tuple[ItemT, ...], str | None]:
    """The first `limit` of `found` (read with one more), and the cursor after the last one when
    more exist."""
    page = tuple(found[:limit])
    return page, cursor_after(page[-1]) if len(found) > limit else None
