"""The outbound network policy, specified as the URLs it refuses and admits.

No test here opens a connection: the policy only parses and resolves, and names resolve through
an in-memory resolver.
"""

from __future__ import annotations

from collections.abc import Sequence
from ipaddress import ip_address

import pytest
from jobhooks.delivery.exceptions import RefusalCode, RefusedUrlError
from jobhooks.delivery.network_policy import (
    AddressCategory,
    NetworkPolicy,
    check_url,
    find_non_public,
)
from jobhooks.subscriptions.exceptions import InvalidUrlError
from jobhooks.subscriptions.model import validate_url


class FakeResolver:
    """Names resolve to whatever the test says; everything else does not resolve."""

    def __init__(self, answers: dict[str, Sequence[str]] | None = None) -> None:
        self.answers = dict(answers or {})
        self.calls: list[str] = []

    def __call__(self, host: str) -> Sequence[str]:
        self.calls.append(host)
        if host not in self.answers:
            raise OSError(f"{host} does not resolve")
        return self.answers[host]


PUBLIC = "93.184.216.34"
PUBLIC_V6 = "2606:4700::1111"


def refusal(url: str, resolver: FakeResolver | None = None, **policy: bool) -> RefusedUrlError:
    with pytest.raises(RefusedUrlError) as raised:
        NetworkPolicy(resolver=resolver or FakeResolver(), **policy).check_url(url)
    return raised.value


# (host as written in the URL, the refusal code, the address category when one is refused)
HOSTILE_HOSTS = [
    ("127.0.0.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.LOOPBACK),
    ("10.0.0.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.PRIVATE),
    ("172.16.0.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.PRIVATE),
    ("192.168.1.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.PRIVATE),
    ("169.254.169.254", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.CLOUD_METADATA),
    ("169.254.1.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.LINK_LOCAL),
    ("100.64.0.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.CARRIER_GRADE_NAT),
    ("100.100.100.200", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.CLOUD_METADATA),
    ("0.0.0.0", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.UNSPECIFIED),
    ("0.1.2.3", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.THIS_NETWORK),
    ("224.0.0.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.MULTICAST),
    ("255.255.255.255", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.BROADCAST),
    ("240.0.0.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.RESERVED),
    ("192.0.0.8", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.RESERVED),
    ("198.18.0.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.BENCHMARKING),
    ("192.0.2.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.DOCUMENTATION),
    ("198.51.100.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.DOCUMENTATION),
    ("203.0.113.1", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.DOCUMENTATION),
    ("[::1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.LOOPBACK),
    ("[::]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.UNSPECIFIED),
    ("[fd00::1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.UNIQUE_LOCAL),
    ("[fe80::1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.LINK_LOCAL),
    ("[fd00:ec2::254]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.CLOUD_METADATA),
    ("[ff02::1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.MULTICAST),
    ("[2001:db8::1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.DOCUMENTATION),
    ("[::ffff:127.0.0.1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.IPV4_MAPPED),
    ("[::ffff:10.0.0.1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.IPV4_MAPPED),
    ("[::127.0.0.1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.IPV4_COMPATIBLE),
    ("[64:ff9b::a9fe:a9fe]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.NAT64),
    ("[64:ff9b::127.0.0.1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.NAT64),
    ("[64:ff9b:1::808:808]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.LOCAL_USE_NAT64),
    ("[2002:7f00:1::1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.SIX_TO_FOUR),
    ("[2002:a9fe:a9fe::]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.SIX_TO_FOUR),
    ("[2001::1]", RefusalCode.ADDRESS_NOT_PUBLIC, AddressCategory.TEREDO),
    ("2130706433", RefusalCode.URL_HOST_NOT_CANONICAL, None),
    ("0x7f.0.0.1", RefusalCode.URL_HOST_NOT_CANONICAL, None),
    ("0x7f000001", RefusalCode.URL_HOST_NOT_CANONICAL, None),
    ("017700000001", RefusalCode.URL_HOST_NOT_CANONICAL, None),
    ("0177.0.0.1", RefusalCode.URL_HOST_NOT_CANONICAL, None),
    ("127.000.0.1", RefusalCode.URL_HOST_NOT_CANONICAL, None),
    ("127.1", RefusalCode.URL_HOST_NOT_CANONICAL, None),
    ("127.0.1", RefusalCode.URL_HOST_NOT_CANONICAL, None),
    ("256.0.0.1", RefusalCode.URL_HOST_NOT_CANONICAL, None),
    ("1.2.3.4.", RefusalCode.URL_HOST_NOT_CANONICAL, None),
]


@pytest.mark.parametrize(("host", "code", "category"), HOSTILE_HOSTS)
def test_refuses_hostile_host_written_in_the_url(
    host: str, code: RefusalCode, category: AddressCategory | None
) -> None:
    resolver = FakeResolver()
    error = refusal(f"https://{host}/hook", resolver)
    assert error.code is code
    assert error.category == (category.value if category else None)
    # A literal is checked as written: asking a resolver could only turn it into something else.
    assert resolver.calls == []


@pytest.mark.parametrize(
    ("address", "category"),
    [(host.strip("[]"), category) for host, code, category in HOSTILE_HOSTS if category],
)
def test_refuses_name_resolving_to_hostile_address(address: str, category: AddressCategory) -> None:
    error = refusal(
        "https://hooks.example.com/hook", FakeResolver({"hooks.example.com": [address]})
    )
    assert error.code is RefusalCode.ADDRESS_NOT_PUBLIC
    assert error.category == category.value
    assert error.address == str(ip_address(address))


def test_refuses_localhost() -> None:
    error = refusal("https://localhost/hook", FakeResolver({"localhost": ["127.0.0.1", "::1"]}))
    assert error.code is RefusalCode.ADDRESS_NOT_PUBLIC
    assert error.category == AddressCategory.LOOPBACK.value


def test_refuses_localhost_with_the_system_resolver() -> None:
    with pytest.raises(RefusedUrlError) as raised:
        check_url("https://localhost:8443/hook")
    assert raised.value.code is RefusalCode.ADDRESS_NOT_PUBLIC


@pytest.mark.parametrize("order", ["public_first", "private_first"])
def test_refuses_name_with_one_public_and_one_private_address(order: str) -> None:
    answers = [PUBLIC, "10.0.0.1"] if order == "public_first" else ["10.0.0.1", PUBLIC]
    error = refusal("https://mixed.example.com/", FakeResolver({"mixed.example.com": answers}))
    assert error.code is RefusalCode.ADDRESS_NOT_PUBLIC
    assert error.address == "10.0.0.1"


def test_refusal_names_the_host_the_address_and_its_category() -> None:
    error = refusal(
        "https://hooks.example.com/x", FakeResolver({"hooks.example.com": ["10.0.0.1"]})
    )
    assert "resolves to 10.0.0.1, a private address" in error.message
    assert "'hooks.example.com'" in error.message
    assert str(error).startswith("address_not_public: ")
    assert error.as_dict() == {"error": "address_not_public", "message": error.message}


def test_refusal_message_names_the_embedded_address_kind() -> None:
    error = refusal("https://[64:ff9b::a9fe:a9fe]/")
    assert "a NAT64 form of a cloud metadata address" in error.message


def test_refusal_never_repeats_the_path_or_query() -> None:
    # Webhook URLs often carry a token; refusals end up in API responses and logs.
    error = refusal("https://10.0.0.1/hooks/s3cr3t?token=t0k3n")
    assert "s3cr3t" not in str(error)
    assert "t0k3n" not in str(error)


@pytest.mark.parametrize(
    "address",
    [
        PUBLIC,
        "1.1.1.1",
        PUBLIC_V6,
        "2a00:1450:4001:81d::200e",
        "64:ff9b::808:808",  # NAT64 of 8.8.8.8: how IPv6-only networks reach IPv4 receivers
        "2002:808:808::1",  # 6to4 of 8.8.8.8
    ],
)
def test_allows_public_address(address: str) -> None:
    resolver = FakeResolver({"hooks.example.com": [address]})
    target = NetworkPolicy(resolver=resolver).check_url("https://hooks.example.com/hook")
    assert target.addresses == (ip_address(address),)
    literal = f"[{address}]" if ":" in address else address
    assert check_url(f"https://{literal}/hook").addresses == (ip_address(address),)


def test_allows_name_with_several_public_addresses_and_keeps_their_order() -> None:
    resolver = FakeResolver({"hooks.example.com": [PUBLIC_V6, PUBLIC, PUBLIC_V6]})
    target = NetworkPolicy(resolver=resolver).check_url("https://hooks.example.com/")
    assert target.addresses == (ip_address(PUBLIC_V6), ip_address(PUBLIC))


# Addresses for which `ipaddress.is_global` is True on at least one supported Python version,
# yet no webhook may reach them.
IS_GLOBAL_GAPS = [
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "64:ff9b:1::1",  # local-use NAT64
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:c0a8:101::",  # 6to4 of 192.168.1.1
    "::7f00:1",  # IPv4-compatible 127.0.0.1
    "::ffff:0:7f00:1",  # SIIT IPv4-translated
    "::ffff:8.8.8.8",  # IPv4-mapped, even of a public address
    "fec0::1",  # site-local
    "3fff::1",  # documentation (RFC 9637)
    "4000::1",  # outside global unicast
    "5f00::1",  # SRv6 SIDs
    "168.63.129.16",  # Azure WireServer
    "192.88.99.1",  # retired 6to4 relay anycast
    "192.0.0.9",  # IETF protocol assignments
]


@pytest.mark.parametrize("address", IS_GLOBAL_GAPS)
def test_refuses_addresses_that_ipaddress_calls_global(address: str) -> None:
    assert find_non_public(ip_address(address)) is not None
    error = refusal("https://gap.example.com/", FakeResolver({"gap.example.com": [address]}))
    assert error.code is RefusalCode.ADDRESS_NOT_PUBLIC


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("http://example.com", RefusalCode.URL_SCHEME_NOT_ALLOWED),
        ("HTTP://example.com/", RefusalCode.URL_SCHEME_NOT_ALLOWED),
        ("ftp://example.com/", RefusalCode.URL_SCHEME_NOT_ALLOWED),
        ("file:///etc/passwd", RefusalCode.URL_SCHEME_NOT_ALLOWED),
        ("gopher://example.com/", RefusalCode.URL_SCHEME_NOT_ALLOWED),
        ("https://user:pass@example.com/", RefusalCode.URL_CREDENTIALS_NOT_ALLOWED),
        ("https://user@example.com/", RefusalCode.URL_CREDENTIALS_NOT_ALLOWED),
        ("https://example.com@10.0.0.1/", RefusalCode.URL_CREDENTIALS_NOT_ALLOWED),
        ("https://example.com/hook#part", RefusalCode.URL_INVALID),
        ("https:///hook", RefusalCode.URL_INVALID),
        ("https://:443/hook", RefusalCode.URL_INVALID),
        ("https:example.com/hook", RefusalCode.URL_INVALID),
        ("example.com/hook", RefusalCode.URL_INVALID),
        ("", RefusalCode.URL_INVALID),
        ("https://example.com:0/", RefusalCode.URL_INVALID),
        ("https://example.com:65536/", RefusalCode.URL_INVALID),
        ("https://example.com:/", RefusalCode.URL_INVALID),
        ("https://example.com:+443/", RefusalCode.URL_INVALID),
        ("https://example.com:1:2/", RefusalCode.URL_INVALID),
        ("https://exa mple.com/", RefusalCode.URL_INVALID),
        ("https://example.com/a b", RefusalCode.URL_INVALID),
        ("https://example.com\\@10.0.0.1/", RefusalCode.URL_INVALID),
        ("https://example.com\t/", RefusalCode.URL_INVALID),
        ("https://exämple.com/", RefusalCode.URL_INVALID),
        ("https://%31%30.0.0.1/", RefusalCode.URL_HOST_NOT_CANONICAL),
        ("https://%31%30.example.com/", RefusalCode.URL_INVALID),
        ("https://-bad-.example.com/", RefusalCode.URL_INVALID),
        ("https://a..b/", RefusalCode.URL_INVALID),
        ("https://[fe80::1%25eth0]/", RefusalCode.URL_INVALID),
        ("https://[::1/", RefusalCode.URL_INVALID),
        ("https://[::1]x/", RefusalCode.URL_INVALID),
        ("https://[not-an-address]/", RefusalCode.URL_INVALID),
        ("https://" + "a" * 2040 + ".com/", RefusalCode.URL_INVALID),
        ("https://example.com./", RefusalCode.URL_HOST_NOT_CANONICAL),
    ],
)
def test_refuses_url_by_its_shape(url: str, code: RefusalCode) -> None:
    resolver = FakeResolver({"example.com": [PUBLIC]})
    assert refusal(url, resolver).code is code
    assert resolver.calls == []


def test_non_canonical_host_refusal_says_what_resolvers_would_make_of_it() -> None:
    error = refusal("https://0x7f.0.0.1/")
    assert "127.0.0.1" in error.message
    assert "four decimal numbers" in error.message


def test_refuses_name_that_does_not_resolve() -> None:
    error = refusal("https://nowhere.example.com/")
    assert error.code is RefusalCode.URL_HOST_UNRESOLVABLE
    assert error.host == "nowhere.example.com"


@pytest.mark.parametrize("answers", [[], ["not-an-address"]])
def test_refuses_name_whose_resolution_is_empty_or_garbage(answers: list[str]) -> None:
    error = refusal("https://odd.example.com/", FakeResolver({"odd.example.com": answers}))
    assert error.code is RefusalCode.URL_HOST_UNRESOLVABLE


def test_resolves_once_per_check() -> None:
    resolver = FakeResolver({"hooks.example.com": [PUBLIC]})
    NetworkPolicy(resolver=resolver).check_url("https://hooks.example.com/")
    assert resolver.calls == ["hooks.example.com"]


def test_strips_the_scope_a_resolver_appends_to_link_local_answers() -> None:
    error = refusal(
        "https://scoped.example.com/", FakeResolver({"scoped.example.com": ["fe80::1%eth0"]})
    )
    assert error.category == AddressCategory.LINK_LOCAL.value


def test_checked_target_is_normalized_for_the_request() -> None:
    resolver = FakeResolver({"hooks.example.com": [PUBLIC]})
    policy = NetworkPolicy(resolver=resolver)

    target = policy.check_url("HTTPS://Hooks.Example.COM:443?a=1&b=%20")
    assert (target.scheme, target.host, target.port) == ("https", "hooks.example.com", 443)
    assert target.request_target == "/?a=1&b=%20"
    assert target.host_header == "hooks.example.com"
    assert target.url == "https://hooks.example.com/?a=1&b=%20"

    target = policy.check_url("https://hooks.example.com:8443/a/b?c")
    assert target.host_header == "hooks.example.com:8443"
    assert target.request_target == "/a/b?c"

    target = policy.check_url(f"https://[{PUBLIC_V6.upper()}]:8443")
    assert target.host == PUBLIC_V6
    assert target.host_header == f"[{PUBLIC_V6}]:8443"
    assert target.request_target == "/"


def test_the_policy_is_immutable() -> None:
    policy = NetworkPolicy()
    with pytest.raises(AttributeError):
        policy.allow_private_networks = True  # type: ignore[misc]


class TestDevelopmentMode:
    """`allow_private_networks=True`: what `jobhooks dev` and the tests need, nothing more."""

    @pytest.mark.parametrize(
        "url",
        [
            "http://127.0.0.1:8080/hook",
            "https://127.0.0.1/hook",
            "http://[::1]:8080/",
            "http://localhost:8080/",
            "http://10.0.0.1/",
            "http://172.17.0.1/",
            "http://192.168.65.2/",
            "http://[fd00::1]/",
            "http://100.64.0.1/",
            "http://example.com/",
        ],
    )
    def test_allows_plain_http_and_local_addresses(self, url: str) -> None:
        resolver = FakeResolver({"localhost": ["127.0.0.1", "::1"], "example.com": [PUBLIC]})
        target = NetworkPolicy(allow_private_networks=True, resolver=resolver).check_url(url)
        assert target.scheme == url.split(":")[0]

    @pytest.mark.parametrize(
        ("host", "category"),
        [
            ("169.254.169.254", AddressCategory.CLOUD_METADATA),
            ("[fd00:ec2::254]", AddressCategory.CLOUD_METADATA),
            ("100.100.100.200", AddressCategory.CLOUD_METADATA),
            ("169.254.1.1", AddressCategory.LINK_LOCAL),
            ("0.0.0.0", AddressCategory.UNSPECIFIED),
            ("224.0.0.1", AddressCategory.MULTICAST),
            ("[::ffff:127.0.0.1]", AddressCategory.IPV4_MAPPED),
            ("[64:ff9b::a00:1]", AddressCategory.NAT64),
        ],
    )
    def test_still_refuses_metadata_and_other_special_addresses(
        self, host: str, category: AddressCategory
    ) -> None:
        error = refusal(f"http://{host}/", allow_private_networks=True)
        assert error.code is RefusalCode.ADDRESS_NOT_PUBLIC
        assert error.category == category.value

    @pytest.mark.parametrize(
        ("url", "code"),
        [
            ("ftp://127.0.0.1/", RefusalCode.URL_SCHEME_NOT_ALLOWED),
            ("http://user:pass@127.0.0.1/", RefusalCode.URL_CREDENTIALS_NOT_ALLOWED),
            ("http://2130706433/", RefusalCode.URL_HOST_NOT_CANONICAL),
        ],
    )
    def test_still_refuses_bad_urls(self, url: str, code: RefusalCode) -> None:
        assert refusal(url, allow_private_networks=True).code is code

    def test_is_off_by_default(self) -> None:
        assert NetworkPolicy().allow_private_networks is False
        assert refusal("http://127.0.0.1:8080/").code is RefusalCode.URL_SCHEME_NOT_ALLOWED
        assert refusal("https://127.0.0.1:8080/").code is RefusalCode.ADDRESS_NOT_PUBLIC


# -- the URL's shape alone ------------------------------------------------------------------------

SHAPE_REFUSALS = [
    ("http://hooks.example.com/", RefusalCode.URL_SCHEME_NOT_ALLOWED),
    ("https://user:pw@hooks.example.com/", RefusalCode.URL_CREDENTIALS_NOT_ALLOWED),
    ("https://hooks.example.com./", RefusalCode.URL_HOST_NOT_CANONICAL),
    ("https://0x7f.1/", RefusalCode.URL_HOST_NOT_CANONICAL),
    ("https://hooks.example.com/#frag", RefusalCode.URL_INVALID),
    ("https://hooks.example.com:99999/", RefusalCode.URL_INVALID),
    ("https://hooks.example.com/caf\u00e9", RefusalCode.URL_INVALID),
    ("https:///path", RefusalCode.URL_INVALID),
    ("https://h.example.com/" + "a" * 2048, RefusalCode.URL_INVALID),
]


@pytest.mark.parametrize(("url", "code"), SHAPE_REFUSALS)
def test_the_shape_rules_refuse_without_asking_dns(url: str, code: RefusalCode) -> None:
    resolver = FakeResolver()
    with pytest.raises(RefusedUrlError) as raised:
        NetworkPolicy(resolver=resolver).check_shape(url)
    assert raised.value.code is code
    assert resolver.calls == []
    # check_url applies the very same rules first.
    assert refusal(url, resolver).code is code


def test_a_well_formed_url_passes_the_shape_rules_whatever_it_resolves_to() -> None:
    resolver = FakeResolver()
    NetworkPolicy(resolver=resolver).check_shape("https://hooks.example.com:8443/a?b=c")
    NetworkPolicy(resolver=resolver).check_shape("https://10.0.0.1/private-but-well-formed")
    NetworkPolicy(allow_private_networks=True, resolver=resolver).check_shape("http://127.0.0.1:1/")
    assert resolver.calls == []


@pytest.mark.parametrize(("url", "code"), SHAPE_REFUSALS)
def test_a_subscription_url_obeys_the_policys_shape_rules(url: str, code: RefusalCode) -> None:
    # The subscription model keeps no URL rules of its own: it asks the policy.
    with pytest.raises(InvalidUrlError) as raised:
        validate_url(url)
    assert raised.value.code == "invalid_url"
    assert raised.value.message == refusal(url).message
