"""The outbound network policy: which webhook URLs the bridge may ever connect to.

Every rule about a webhook URL lives here, its shape and the rules against server-side request
forgery alike, so neither the subscription store (`check_shape`, when a URL is stored), the
management API (`check_url`, when a subscription is created or changed) nor the deliver function
(`check_url` again before every attempt) can forget one:

- `https` only, no credentials in the URL, no fragment, a host written canonically;
- the host is resolved once and EVERY address it resolves to must be public (a name with one
  public and one private address is refused: the resolver, not us, would pick between them);
- the caller connects to the checked addresses only (`CheckedTarget.addresses`), so a second
  resolution that answers differently (DNS rebinding) never reaches a socket.

`ipaddress.is_global` alone is not enough: on the Python versions we support it calls NAT64 and
6to4 forms of private IPv4 addresses, IPv4-compatible addresses, site-local, unallocated and
documentation (3fff::/20) IPv6 ranges "global", and it knows nothing about cloud metadata
endpoints. The tables below are therefore the authority, `is_global` only a last safety net.

`allow_private_networks` is for `jobhooks dev` and tests only: it admits plain `http` and
loopback, private, unique-local and carrier-grade NAT addresses, nothing else.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Sequence
from enum import StrEnum
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from typing import Final, NamedTuple

from jobhooks.delivery.exceptions import RefusalCode, RefusedUrlError
from jobhooks.delivery.limits import MAX_URL_LENGTH as MAX_URL_LENGTH
from jobhooks.frozen_record import FrozenRecord

IPAddress = IPv4Address | IPv6Address

# A host name -> the addresses it resolves to, as text. Tests inject one to make names resolve
# to hostile addresses; raising OSError means "does not resolve".
Resolver = Callable[[str], Sequence[str]]

MAX_HOST_LENGTH: Final = 253

DEFAULT_PORTS: Final = {"https": 443, "http": 80}

# RFC 3986 characters; anything else must be percent-encoded. Refusing the rest (spaces,
# backslashes, quotes, non-ASCII) removes the places where two URL parsers disagree.
_URL_CHARACTERS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"
)
_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_HOST_LABEL: Final = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_DECIMAL_OCTET: Final = re.compile(r"0|[1-9][0-9]{0,2}")
_HEX_NUMBER: Final = re.compile(r"0x[0-9a-f]*")


class AddressCategory(StrEnum):
    """What kind of non-public address a URL led to; the value reads well in a sentence."""

    UNSPECIFIED = "unspecified"
    THIS_NETWORK = "this-network"
    LOOPBACK = "loopback"
    PRIVATE = "private"
    CARRIER_GRADE_NAT = "carrier-grade NAT"
    LINK_LOCAL = "link-local"
    CLOUD_METADATA = "cloud metadata"
    MULTICAST = "multicast"
    BROADCAST = "broadcast"
    BENCHMARKING = "benchmarking"
    DOCUMENTATION = "documentation"
    RESERVED = "reserved"
    UNIQUE_LOCAL = "unique local"
    SITE_LOCAL = "site-local"
    DISCARD_ONLY = "discard-only"
    TEREDO = "Teredo"
    IPV4_MAPPED = "IPv4-mapped"
    IPV4_COMPATIBLE = "IPv4-compatible"
    NAT64 = "NAT64"
    LOCAL_USE_NAT64 = "local-use NAT64"
    SIX_TO_FOUR = "6to4"


# What a developer's own machine and containers use; everything else stays refused even in
# development mode (no one runs a webhook receiver on a metadata or multicast address).
DEVELOPMENT_CATEGORIES: Final = frozenset(
    {
        AddressCategory.LOOPBACK,
        AddressCategory.PRIVATE,
        AddressCategory.UNIQUE_LOCAL,
        AddressCategory.CARRIER_GRADE_NAT,
    }
)

# Instance metadata, credentials and platform endpoints. Most sit inside ranges refused anyway;
# naming them gives a clearer message, and 168.63.129.16 (Azure) is otherwise a public address.
CLOUD_METADATA_ADDRESSES: Final[frozenset[IPAddress]] = frozenset(
    ip_address(text)
    for text in (
        "169.254.169.254",  # AWS, GCP, Azure, OCI, DigitalOcean... instance metadata
        "169.254.169.253",  # AWS VPC DNS
        "169.254.169.123",  # AWS time sync
        "169.254.170.2",  # AWS ECS task metadata and credentials
        "169.254.170.23",  # AWS EKS Pod Identity
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
        "168.63.129.16",  # Azure WireServer
        "fd00:ec2::254",  # AWS instance metadata over IPv6
        "fd00:ec2::253",
        "fd00:ec2::123",
        "fd00:ec2::23",
    )
)

# IANA special-purpose registries; the first matching network wins.
_IPV4_RANGES: Final = tuple(
    (IPv4Network(network), category)
    for network, category in (
        ("0.0.0.0/32", AddressCategory.UNSPECIFIED),
        ("0.0.0.0/8", AddressCategory.THIS_NETWORK),
        ("10.0.0.0/8", AddressCategory.PRIVATE),
        ("100.64.0.0/10", AddressCategory.CARRIER_GRADE_NAT),
        ("127.0.0.0/8", AddressCategory.LOOPBACK),
        ("169.254.0.0/16", AddressCategory.LINK_LOCAL),
        ("172.16.0.0/12", AddressCategory.PRIVATE),
        ("192.0.0.0/24", AddressCategory.RESERVED),  # IETF protocol assignments
        ("192.0.2.0/24", AddressCategory.DOCUMENTATION),
        ("192.88.99.0/24", AddressCategory.RESERVED),  # retired 6to4 relay anycast
        ("192.168.0.0/16", AddressCategory.PRIVATE),
        ("198.18.0.0/15", AddressCategory.BENCHMARKING),
        ("198.51.100.0/24", AddressCategory.DOCUMENTATION),
        ("203.0.113.0/24", AddressCategory.DOCUMENTATION),
        ("224.0.0.0/4", AddressCategory.MULTICAST),
        ("255.255.255.255/32", AddressCategory.BROADCAST),
        ("240.0.0.0/4", AddressCategory.RESERVED),
    )
)

_IPV6_RANGES: Final = tuple(
    (IPv6Network(network), category)
    for network, category in (
        ("::/128", AddressCategory.UNSPECIFIED),
        ("::1/128", AddressCategory.LOOPBACK),
        ("64:ff9b:1::/48", AddressCategory.LOCAL_USE_NAT64),
        ("::/8", AddressCategory.RESERVED),  # includes SIIT ::ffff:0:0:0/96
        ("100::/64", AddressCategory.DISCARD_ONLY),
        ("2001::/32", AddressCategory.TEREDO),
        ("2001:2::/48", AddressCategory.BENCHMARKING),
        ("2001::/23", AddressCategory.RESERVED),  # IETF protocol assignments, ORCHID
        ("2001:db8::/32", AddressCategory.DOCUMENTATION),
        ("3fff::/20", AddressCategory.DOCUMENTATION),
        ("fc00::/7", AddressCategory.UNIQUE_LOCAL),
        ("fe80::/10", AddressCategory.LINK_LOCAL),
        ("fec0::/10", AddressCategory.SITE_LOCAL),
        ("ff00::/8", AddressCategory.MULTICAST),
    )
)

_IPV4_MAPPED: Final = IPv6Network("::ffff:0:0/96")
_IPV4_COMPATIBLE: Final = IPv6Network("::/96")
_NAT64: Final = IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR: Final = IPv6Network("2002::/16")
# Only 2000::/3 is allocated for global unicast; the rest of the space is not routable today.
_GLOBAL_UNICAST: Final = IPv6Network("2000::/3")


class NonPublicAddress(NamedTuple):
    """Why an address is not public: its category and a phrase for the message."""

    category: AddressCategory
    description: str  # e.g. "a private address", "a NAT64 form of a loopback address"


def _article(noun: str) -> str:
    return "an" if noun[0].lower() in "aeiou" else "a"


def _plain(category: AddressCategory) -> NonPublicAddress:
    return NonPublicAddress(category, f"{_article(category.value)} {category.value} address")


def find_non_public(address: IPAddress) -> NonPublicAddress | None:
    """`None` when the address is public, else what kind of address it is."""
    if address in CLOUD_METADATA_ADDRESSES:
        return _plain(AddressCategory.CLOUD_METADATA)
    if isinstance(address, IPv4Address):
        for network, category in _IPV4_RANGES:
            if address in network:
                return _plain(category)
        return None if address.is_global else _plain(AddressCategory.RESERVED)
    return _find_non_public_ipv6(address)


def _find_non_public_ipv6(address: IPv6Address) -> NonPublicAddress | None:
    # These forms carry an IPv4 address that the kernel or a translator would actually reach.
    if address in _IPV4_MAPPED:
        return _embedding(AddressCategory.IPV4_MAPPED, IPv4Address(int(address) & 0xFFFFFFFF))
    if address in _IPV4_COMPATIBLE and int(address) > 1:
        return _embedding(AddressCategory.IPV4_COMPATIBLE, IPv4Address(int(address)))
    if address in _NAT64 or address in _SIX_TO_FOUR:
        category = AddressCategory.NAT64 if address in _NAT64 else AddressCategory.SIX_TO_FOUR
        embedded = (
            IPv4Address(int(address) & 0xFFFFFFFF)
            if category is AddressCategory.NAT64
            else IPv4Address((int(address) >> 80) & 0xFFFFFFFF)
        )
        inner = find_non_public(embedded)
        # A translator in front of a public IPv4 address is how IPv6-only networks reach it.
        if inner is None:
            return None
        return NonPublicAddress(category, f"a {category.value} form of {inner.description}")
    for network, range_category in _IPV6_RANGES:
        if address in network:
            return _plain(range_category)
    if address not in _GLOBAL_UNICAST or not address.is_global:
        return _plain(AddressCategory.RESERVED)
    return None


def _embedding(category: AddressCategory, embedded: IPv4Address) -> NonPublicAddress:
    # Refused even around a public IPv4 address: no resolver returns these for a real
    # receiver, and the plain IPv4 form works just as well.
    inner = find_non_public(embedded)
    if inner is None:
        return NonPublicAddress(
            category, f"an {category.value} IPv6 address (use the IPv4 address {embedded})"
        )
    return NonPublicAddress(category, f"an {category.value} form of {inner.description}")


def resolve_host(host: str) -> list[str]:
    """The system resolver: every address `host` resolves to for a TCP connection."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class CheckedTarget(FrozenRecord):
    """A webhook URL that passed the policy, with the addresses it may be reached at.

    Connect only to `addresses` (in order), never to a fresh resolution of `host`.
    """

    __slots__ = ("addresses", "host", "port", "request_target", "scheme")
    scheme: str
    host: str  # lower case; an IPv6 literal without brackets
    port: int
    request_target: str  # path and query as sent on the request line, at least "/"
    addresses: tuple[IPAddress, ...]

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        request_target: str,
        addresses: tuple[IPAddress, ...],
    ) -> None:
        object.__setattr__(self, "scheme", scheme)
        object.__setattr__(self, "host", host)
        object.__setattr__(self, "port", port)
        object.__setattr__(self, "request_target", request_target)
        object.__setattr__(self, "addresses", addresses)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host_header}{self.request_target}"


class _ParsedUrl(NamedTuple):
    scheme: str
    host: str
    port: int
    request_target: str
    literal: IPAddress | None


class NetworkPolicy(FrozenRecord):
    """The rules for outbound webhook connections. Production uses the defaults."""

    __slots__ = ("allow_private_networks", "resolver")
    allow_private_networks: bool
    resolver: Resolver

    def __init__(
        self,
        allow_private_networks: bool = False,
        resolver: Resolver = resolve_host,
    ) -> None:
        object.__setattr__(self, "allow_private_networks", allow_private_networks)
        object.__setattr__(self, "resolver", resolver)

    def check_url(self, url: str) -> CheckedTarget:
        """The URL parsed, resolved once and checked; raises `RefusedUrlError` with a code."""
        parsed = self._parse(url)
        if parsed.literal is not None:
            addresses: tuple[IPAddress, ...] = (parsed.literal,)
        else:
            addresses = self._resolve(parsed.host)
        for address in addresses:
            self._check_address(parsed.host, address, literal=parsed.literal is not None)
        return CheckedTarget(
            scheme=parsed.scheme,
            host=parsed.host,
            port=parsed.port,
            request_target=parsed.request_target,
            addresses=addresses,
        )

    def check_shape(self, url: str) -> None:
        """The rules that need no DNS answer: length, characters, scheme, no credentials or
        fragment, a canonical host and a valid port. Raises `RefusedUrlError` with a code;
        `check_url` applies them too, before it resolves the host."""
        self._parse(url)

    def _parse(self, url: str) -> _ParsedUrl:
        if not isinstance(url, str) or not url:
            raise _invalid("a webhook URL is required, e.g. https://example.com/webhooks")
        if len(url) > MAX_URL_LENGTH:
            raise _invalid(f"the webhook URL is longer than {MAX_URL_LENGTH} characters")
        if not set(url) <= _URL_CHARACTERS:
            raise _invalid(
                "the webhook URL contains spaces, control, non-ASCII or other characters that "
                "must be percent-encoded; encode them, and write international host names in "
                "their xn-- form"
            )
        scheme_match = _SCHEME.match(url)
        if scheme_match is None or not url[scheme_match.end() :].startswith("//"):
            raise _invalid("the webhook URL must start with https://")
        scheme = scheme_match.group(1).lower()
        allowed = ("https", "http") if self.allow_private_networks else ("https",)
        if scheme not in allowed:
            raise RefusedUrlError(
                RefusalCode.URL_SCHEME_NOT_ALLOWED,
                f"the webhook URL uses {scheme}://; webhooks are only sent over https://, "
                "so give an https:// URL",
            )
        rest = url[scheme_match.end() + 2 :]
        authority_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        authority, target = rest[:authority_end], rest[authority_end:]
        if "#" in target:
            raise _invalid(
                "the webhook URL has a #fragment, which is never sent to the receiver; remove it"
            )
        if "@" in authority:
            raise RefusedUrlError(
                RefusalCode.URL_CREDENTIALS_NOT_ALLOWED,
                "the webhook URL embeds credentials (user:password@ before the host); remove "
                "them and authenticate deliveries by verifying the webhook signature instead",
            )
        host_text, port_text, bracketed = _split_authority(authority)
        port = _parse_port(port_text, DEFAULT_PORTS[scheme])
        if bracketed:
            literal: IPAddress | None = _parse_ipv6_literal(host_text)
            host = str(literal)
        else:
            host = host_text.lower()
            literal = _parse_host(host)
        if not target.startswith("/"):
            target = "/" + target
        return _ParsedUrl(scheme, host, port, target, literal)

    def _resolve(self, host: str) -> tuple[IPAddress, ...]:
        def unresolvable(why: str) -> RefusedUrlError:
            return RefusedUrlError(
                RefusalCode.URL_HOST_UNRESOLVABLE,
                f"the host {host!r} {why}; check the spelling and its DNS records",
                host=host,
            )

        try:
            answers = self.resolver(host)
        except (OSError, UnicodeError):
            raise unresolvable("does not resolve to any address") from None
        addresses: list[IPAddress] = []
        for answer in answers:
            try:
                # getaddrinfo appends "%scope" to link-local IPv6 answers.
                address = ip_address(answer.partition("%")[0])
            except ValueError:
                raise unresolvable("resolved to something that is not an IP address") from None
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise unresolvable("does not resolve to any address")
        return tuple(addresses)

    def _check_address(self, host: str, address: IPAddress, *, literal: bool) -> None:
        finding = find_non_public(address)
        if finding is None:
            return
        if self.allow_private_networks and finding.category in DEVELOPMENT_CATEGORIES:
            return
        subject = (
            f"the address {address} is" if literal else f"the host {host!r} resolves to {address},"
        )
        raise RefusedUrlError(
            RefusalCode.ADDRESS_NOT_PUBLIC,
            f"{subject} {finding.description}; webhooks are only sent to public "
            "internet addresses, so use a publicly reachable host",
            host=host,
            address=str(address),
            category=finding.category.value,
        )


def check_url(
    url: str, *, allow_private_networks: bool = False, resolver: Resolver = resolve_host
) -> CheckedTarget:
    """`NetworkPolicy(...).check_url(url)`: for callers that check one URL and are done."""
    return NetworkPolicy(allow_private_networks, resolver).check_url(url)


def _invalid(message: str) -> RefusedUrlError:
    return RefusedUrlError(RefusalCode.URL_INVALID, message)


def _split_authority(authority: str) -> tuple[str, str | None, bool]:
    """(host, port text or None, whether the host was in brackets)."""
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise _invalid("the webhook URL's IPv6 address is missing its closing ']'")
        after = authority[end + 1 :]
        if after and not after.startswith(":"):
            raise _invalid("the webhook URL has characters between ']' and the port")
        return authority[1:end], after[1:] if after else None, True
    if authority.count(":") > 1:
        raise _invalid("the webhook URL's host has several ':'; write IPv6 addresses in [ ]")
    host, colon, port = authority.partition(":")
    return host, port if colon else None, False


def _parse_port(text: str | None, default: int) -> int:
    if text is None:
        return default
    if not text.isdigit() or len(text) > 5 or not 1 <= int(text) <= 65535:
        raise _invalid("the webhook URL's port must be a number from 1 to 65535")
    return int(text)


def _parse_ipv6_literal(text: str) -> IPv6Address:
    if "%" in text:
        raise _invalid("the webhook URL's IPv6 address has a zone (%...), which is local-only")
    try:
        return IPv6Address(text)
    except ValueError:
        raise _invalid(f"[{text}] is not a valid IPv6 address") from None


def _parse_host(host: str) -> IPv4Address | None:
    """The IPv4 literal the host spells, `None` for a name; refuses everything else."""
    if not host:
        raise _invalid("the webhook URL has no host, e.g. https://example.com/webhooks")
    labels = host.split(".")
    last = labels[-2] if len(labels) > 1 and labels[-1] == "" else labels[-1]
    # The WHATWG URL rule: a host whose last label is a number is an IPv4 address. Resolvers
    # (inet_aton) read 2130706433, 0x7f.1, 017700000001 and 127.1 as 127.0.0.1, so only the
    # dotted-decimal form is accepted, and it is checked like any other address.
    if last.isdigit() or _HEX_NUMBER.fullmatch(last):
        if len(labels) == 4 and all(
            _DECIMAL_OCTET.fullmatch(label) and int(label) <= 255 for label in labels
        ):
            return IPv4Address(host)
        raise RefusedUrlError(
            RefusalCode.URL_HOST_NOT_CANONICAL,
            f"the host {host!r} is a non-standard spelling of an IP address{_meaning(host)}; "
            "write an IPv4 address as four decimal numbers without leading zeros, or use a "
            "host name",
            host=host,
        )
    if labels[-1] == "" and len(labels) > 1:
        raise RefusedUrlError(
            RefusalCode.URL_HOST_NOT_CANONICAL,
            f"the host {host!r} ends with a dot; write it without the trailing dot",
            host=host,
        )
    if len(host) > MAX_HOST_LENGTH or not all(_HOST_LABEL.fullmatch(label) for label in labels):
        raise _invalid(
            f"{host!r} is not a valid host name (letters, digits and '-' in dot-separated "
            "labels of at most 63 characters)"
        )
    return None


def _meaning(host: str) -> str:
    try:
        return f" (resolvers read it as {socket.inet_ntoa(socket.inet_aton(host))})"
    except OSError:
        return ""
