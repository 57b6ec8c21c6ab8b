"""A child process that decodes frames for ``test_length_guard``: an abort kills it, not pytest.

Protocol on stdin: ``kind`` (1 byte: ``q`` request, ``r`` response), api key and version
(int16 each), frame length (int32), frame. For each frame it writes one byte to stdout:
``d`` decoded, ``e`` rejected with an exception (which is what bad input should get).
A frame that makes kio's native reader abort ends the process instead.
"""

from __future__ import annotations

import struct
import sys

from odradek.protocol.messages import decode_request, decode_response

_HEADER = struct.Struct(">chhi")


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while header := stdin.read(_HEADER.size):
        kind, api_key, version, length = _HEADER.unpack(header)
        frame = memoryview(stdin.read(length))
        try:
            if kind == b"q":
                decode_request(frame)
            else:
                decode_response(frame, api_key, version)
        except Exception:
            stdout.write(b"e")
        else:
            stdout.write(b"d")
        stdout.flush()


if __name__ == "__main__":
    main()
