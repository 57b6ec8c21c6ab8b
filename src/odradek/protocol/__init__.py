"""Sans-IO Kafka wire protocol: no sockets, no asyncio.

* ``framing``        — :class:`FrameReader` (size-prefixed frames, ``socket.request.max.bytes``)
* ``messages``       — request/response headers and kio-backed message codecs
                       (:func:`decode_request`, :func:`encode_response`, ...)
* ``api_versions``   — the advertised and parseable version table
* ``negotiation``    — ApiVersions responses, including the v0 "too new" answer
* ``fetch_response`` — zero-copy Fetch response encoder (bytes + file-region chunks)
* ``records``        — RecordBatch v2; ``compression`` — codecs; ``errors`` — Kafka errors
"""
