"""Loopback-only addresses: every simulated server and client binds or connects to 127.0.0.1.

Rules: a host is accepted when it is "localhost" or an IP address in 127.0.0.0/8 or ::1; anything
else is refused with a ValueError naming the parameter, so no simulation listens on a network.
"""

from __future__ import annotations

import ipaddress

__all__ = ["check_loopback"]


def check_loopback(host: str, parameter: str = "host") -> str:
    """host, if it is a loopback address; else ValueError naming ``parameter``."""
    if host == "localhost":
        return host
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"{parameter} must be a loopback IP address such as 127.0.0.1, got {host!r}") from None
    if not address.is_loopback:
        raise ValueError(f"{parameter} must be a loopback address (127.0.0.0/8 or ::1), got {host!r}")
    return host
