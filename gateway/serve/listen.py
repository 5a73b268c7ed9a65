"""The gateway's listening address, taken before anything slow starts.

`gateway serve` binds its port first, then loads models and starts Ray, then listens. The
models can take minutes to load and Ray starts processes that bind ports of their own; a
port claimed only at the end can be taken in between (seen: a Ray process's Prometheus
server on the port picked for the gateway, answering its health probe with 200). Bound
early, the port is ours from the first second, and a port already in use is a one-line
error before any model loads.

Knows sockets only: nothing of uvicorn, the app or the models.
"""

from __future__ import annotations

import socket


class AddressInUse(RuntimeError):
    """The host and port cannot be bound (in use, or not an address of this machine)."""


def bind_address(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port), not yet listening: connections are refused, not
    queued, until the server listens on it. Port 0 binds a free port (read it back with
    `getsockname`)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise AddressInUse(f"cannot resolve --host {host!r}: {e.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    # a restart on the same port must not wait for the old connections' TIME_WAIT
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as e:
        sock.close()
        raise AddressInUse(
            f"cannot bind {host}:{port}: {e.strerror or e}"
            + ("; another process has it: pick another --port" if port else "")
        ) from None
    return sock
