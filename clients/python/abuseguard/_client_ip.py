# SPDX-License-Identifier: Apache-2.0
"""``client_ip``: the address to send as ``ip``, behind proxies you trust.

Every limit keyed on the address is only as good as this choice. The
peer of the TCP connection is the answer unless it is one of your own
proxies; then the forwarding header is read from the right (the entries
your proxies appended) and the first address that is not a trusted proxy
is the client. Entries further left were written by whoever sent the
request, an attacker included, and are never believed.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from typing import Iterable, List, Mapping, Optional, Sequence, Union

from ._errors import ArgumentError

# ":" and a port: up to 5 digits, or RFC 7239's obfuscated "_name"
# (obfport), as the Go and Node.js clients take it.
_PORT = re.compile(r":(?:[0-9]{1,5}|_[A-Za-z0-9._-]+)")

Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
Headers = Union[Mapping[str, Union[str, Sequence[str]]],
                Iterable[Sequence[str]]]
"""A mapping of header names to a value or a list of values (any case),
pairs of name and value, or an ``email.message.Message`` such as
``http.server``'s ``self.headers`` (its ``get_all`` is used)."""


def client_ip(remote_addr: str, headers: Headers,
              trusted_proxies: Iterable[Union[str, Network]],
              header: str = "x-forwarded-for") -> str:
    """The client's address for a request that arrived from
    ``remote_addr`` (the TCP peer).

    ``trusted_proxies``: CIDRs or single addresses (``"10.0.0.0/8"``,
    ``"192.0.2.7"``), or ``ipaddress`` networks. ``header``: the one your
    own proxy sets, ``"x-forwarded-for"`` or ``"forwarded"`` (RFC 7239: the
    ``for=`` of every element); a header it passes through untouched is
    the attacker's. Several lines of it are read as one, joined by commas.

    When ``remote_addr`` is not a trusted proxy it is the answer.
    Otherwise the header's entries are walked from the right, skipping
    trusted proxies; the first other address is the answer, and if all
    are trusted, the leftmost. An entry that is not an address
    (``unknown``, an obfuscated ``_name``, an empty ``for=``, garbage)
    ends the walk at the last trusted address walked; an empty element of
    ``X-Forwarded-For`` (``a,,b``) is no entry and is skipped. Ports
    (decimal, or RFC 7239's obfuscated ``_name``), brackets and IPv6 zones
    (``%eth0``, the proxy's own interface) are stripped, an IPv4-mapped
    IPv6 address is its IPv4 address (a mapped trusted proxy or range
    too), and the answer is the address's canonical spelling. Raises
    ``ArgumentError`` for a trusted proxy that is no address or CIDR.
    """
    nets = [_network(proxy) for proxy in trusted_proxies]
    remote = _address(remote_addr)
    if remote is None:
        return remote_addr
    last = remote
    if not _trusted(remote, nets):
        return str(last)
    values = _values(headers, header.lower())
    if header.lower() == "forwarded":
        # An empty for= is a value, and no address: it ends the walk.
        entries = _forwarded_for(values)
    else:
        # RFC 9110 5.6.1: empty list elements are no elements.
        entries = [e for v in values for e in v.split(",") if e.strip()]
    for entry in reversed(entries):
        addr = _address(entry)
        if addr is None:
            break
        last = addr
        if not _trusted(addr, nets):
            break
    return str(last)


@functools.lru_cache(maxsize=256)
def _parse_network(text: str) -> Network:
    try:
        return _unmapped(ipaddress.ip_network(text.strip(), strict=False))
    except ValueError:
        raise ArgumentError("trusted proxy %r is no address or CIDR"
                            % text, "trusted_proxies") from None


def _network(proxy: Union[str, Network]) -> Network:
    if isinstance(proxy, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return _unmapped(proxy)
    return _parse_network(proxy)


def _unmapped(net: Network) -> Network:
    """A range inside ``::ffff:0:0/96`` as the IPv4 range it maps
    (``::ffff:10.0.0.0/104`` is ``10.0.0.0/8``): the addresses it is
    matched against are unmapped, and an IPv6 range never holds an IPv4
    address. A wider range keeps its IPv6 form, as in the Go and Node.js
    clients."""
    if isinstance(net, ipaddress.IPv6Network) and net.prefixlen >= 96:
        mapped = net.network_address.ipv4_mapped
        if mapped is not None:
            return ipaddress.IPv4Network((mapped, net.prefixlen - 96))
    return net


def _trusted(addr: Address, nets: List[Network]) -> bool:
    # An address is never in a network of the other family.
    return any(addr in net for net in nets)


def _address(text: str) -> Optional[Address]:
    """The address of an entry (``1.2.3.4``, ``1.2.3.4:80``, ``::1``,
    ``[2001:db8::1]:4711``, ``fe80::1%eth0``), IPv4-mapped made IPv4, the
    zone dropped; None for anything else."""
    text = text.strip()
    if text.startswith("["):
        host, bracket, port = text[1:].partition("]")
        if not bracket or (port and not _PORT.fullmatch(port)):
            return None
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
        if not _PORT.fullmatch(":" + port):
            return None
    else:
        host = text
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped:
            return addr.ipv4_mapped
        if addr.scope_id is not None:
            # The zone names the proxy's interface, not the client's
            # address, and the service refuses an ip that carries one.
            return ipaddress.IPv6Address(addr.packed)
    return addr


def _values(headers: Headers, name: str) -> List[str]:
    """Every value of the header ``name`` (lower case), in order."""
    get_all = getattr(headers, "get_all", None)
    if get_all is not None:  # email.message.Message: case-insensitive
        return [str(v) for v in get_all(name) or ()]
    items = headers.items() if isinstance(headers, Mapping) else headers
    found: List[str] = []
    for key, value in items:
        if key.lower() != name or value is None:
            continue
        if isinstance(value, str):
            found.append(value)
        else:
            found.extend(value)
    return found


def _forwarded_for(values: List[str]) -> List[str]:
    """The ``for=`` values of RFC 7239 ``Forwarded`` header values, left to
    right, unquoted."""
    found = []
    for element in _split(",".join(values), ","):
        for pair in _split(element, ";"):
            key, eq, value = pair.partition("=")
            if eq and key.strip().lower() == "for":
                found.append(_unquote(value.strip()))
    return found


def _split(text: str, sep: str) -> List[str]:
    """``text`` split at ``sep`` outside double-quoted strings."""
    parts, start, quoted, escaped = [], 0, False, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif quoted and ch == "\\":
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == sep and not quoted:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value
