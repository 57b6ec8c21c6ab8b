"""ApiVersions on the wire, including the too-new-version quirk."""

from __future__ import annotations

import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest as V0
from kio.schema.api_versions.v3.request import ApiVersionsRequest as V3
from kio.schema.api_versions.v4.request import ApiVersionsRequest as V4

from odradek.protocol.api_versions import ADVERTISED
from odradek.protocol.messages import encode_request

from .inprocess import InProcessBroker
from .wire import WireClient

EXPECTED = {int(k): (r.min_version, r.max_version) for k, r in ADVERTISED.items()}


@pytest.mark.parametrize("request_body", [V0(), V3(client_software_name="t",
                                                     client_software_version="1")])
def test_supported_versions_list_the_table(
    shared_broker: InProcessBroker, request_body: object
) -> None:
    with WireClient(shared_broker.port) as client:
        response = client.request(request_body)
        assert response.error_code == 0
        listed = {e.api_key: (e.min_version, e.max_version) for e in response.api_keys}
        assert listed == EXPECTED


def test_too_new_version_gets_v0_error_and_connection_stays_usable(
    shared_broker: InProcessBroker,
) -> None:
    with WireClient(shared_broker.port) as client:
        client.send_raw(encode_request(V4(client_software_name="t", client_software_version="1"),
                                       correlation_id=77))
        frame = client.read_frame()
        assert frame.hex() == "0000004d" "0023" "00000001" "0012" "0000" "0003"
        # the client retries lower on the same connection
        retry = client.request(V3(client_software_name="t", client_software_version="1"))
        assert retry.error_code == 0
