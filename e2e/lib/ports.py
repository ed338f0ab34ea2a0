"""Loopback ports for the servers a harness starts.

A port from ``bind(("127.0.0.1", 0))`` lies in the kernel's ephemeral range
(``net.ipv4.ip_local_port_range``). Between the probe closing it and the server
binding it, any outgoing connection on the machine may get that port as its
local port, and the server then fails with "Address already in use" (a CI run
failed that way in the crash harness, whose 64 writers had just made thousands
of connections). Ports below the ephemeral range are never handed out to
outgoing connections, so only another explicit bind can race for them.

Use as a module (``from ports import free_port``) or as a script, which prints
one port (for shell harnesses).
"""

from __future__ import annotations

import random
import socket

LOWEST = 20000
DEFAULT_EPHEMERAL_LOW = 32768


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_LOW


def free_port(host: str = "127.0.0.1") -> int:
    """A port below the ephemeral range that nothing is bound to right now."""
    high = ephemeral_low()
    low = LOWEST if high - LOWEST >= 1000 else 1024
    for _ in range(500):
        port = random.randrange(low, high)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {low}..{high} on {host}")


if __name__ == "__main__":
    print(free_port())
