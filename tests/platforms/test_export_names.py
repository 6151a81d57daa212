"""Exported port names are unique: two members that would flatten to one name are refused."""

import pytest
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In

from opengse.platforms.export import port_map
from opengse.rtl.catalog import blocks, get_block, resolve_params


class _Colliding(wiring.Component):
    # The payload's ``valid`` field would be exported as ``s_dest_valid``, the handshake.
    s_dest: In(stream.Signature(data.StructLayout({"mac": 48, "valid": 1})))

    def elaborate(self, platform):  # pragma: no cover - never elaborated
        raise NotImplementedError


def test_a_payload_field_named_like_the_handshake_is_refused():
    with pytest.raises(ValueError, match="s_dest_valid"):
        port_map(_Colliding())


@pytest.mark.parametrize("block", sorted(blocks()))
def test_every_block_has_unique_port_names(block):
    spec = get_block(block)
    ports, _ = port_map(spec.build(**resolve_params(spec, {})))
    assert ports
