"""The worker process of :class:`tensorkiln.tuning.executor.IsolatedProcessPool`.

Reads length-prefixed pickled ``(fn, args, kwargs)`` calls from stdin and writes
length-prefixed pickled ``(ok, result_or_exception)`` replies. The reply channel is a
private copy of the original stdout; fd 1 then points at stderr, so prints from Python
or native code cannot corrupt a reply.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys

_HEADER = struct.Struct("<Q")


def _read_exact(stream, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main() -> None:
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    import tensorkiln.driver  # noqa: F401  (the compiler, before the ready signal)
    import tensorkiln.tuning.measure  # noqa: F401

    replies.write(b"R")
    replies.flush()
    while True:
        header = _read_exact(requests, _HEADER.size)
        if header is None:
            return
        (size,) = _HEADER.unpack(header)
        payload = _read_exact(requests, size)
        if payload is None:
            return
        try:
            fn, args, kwargs = pickle.loads(payload)
            reply = (True, fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - sent back to the caller
            reply = (False, error)
        try:
            data = pickle.dumps(reply)
        except Exception as error:  # noqa: BLE001 - an unpicklable result or exception
            data = pickle.dumps((False, RuntimeError(f"unpicklable reply: {error!r}")))
        replies.write(_HEADER.pack(len(data)) + data)
        replies.flush()


if __name__ == "__main__":
    main()
