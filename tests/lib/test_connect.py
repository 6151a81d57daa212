"""The blocks of a leaf join with ``wiring.connect``, sized from one GSEConfig.

One test per pair of the table in rtl/interfaces.py (source member -> sink member).
``wiring.connect`` raises ``ConnectionError`` when the two signatures differ in any
member, width or direction, so each test fails on a mismatch.
"""

import pytest
from amaranth.hdl import Array, Module, Mux
from amaranth.lib import data, wiring

from opengse.rtl import interfaces
from opengse.rtl.config import GSEConfig
from opengse.rtl.dgsq.arbiter import GrantArbiter
from opengse.rtl.dgsq.container_framing import ContainerFraming
from opengse.rtl.dgsq.control_demux import ControlDemux
from opengse.rtl.dgsq.grant_framing import GrantFraming
from opengse.rtl.dgsq.manager import DGSQManager
from opengse.rtl.header.control_frames import ControlFrameDecoder, ControlFrameEncoder
from opengse.rtl.header.gse_header import GSEType
from opengse.rtl.header.parser import GSEParser, ParsedHeaderLayout
from opengse.rtl.lib.packet_demux import PacketDemux
from opengse.rtl.lib.packet_mux import PacketMux
from opengse.rtl.lib.skid_buffer import SkidBuffer
from opengse.rtl.lib.stream import axis_beat_layout
from opengse.rtl.pktc.reorder import ReorderBuffer
from opengse.rtl.pktc.sprayer import ContainerSprayer, SprayMetaLayout
from opengse.rtl.voq.buffer import VOQBuffer

CFG = GSEConfig()


class Leaf:
    """The blocks of one leaf, built from :data:`CFG` (constructed, not elaborated)."""

    def __init__(self, cfg=CFG):
        self.manager = DGSQManager(**cfg.manager_params())
        self.voq = VOQBuffer(**cfg.voq_params())
        self.sprayer = ContainerSprayer(**cfg.sprayer_params())
        self.arbiter = GrantArbiter(**cfg.arbiter_params())
        self.reorder = ReorderBuffer(**cfg.reorder_params())
        self.parser = GSEParser(data_width=cfg.data_width, strip=0, ethertype=cfg.ethertype)
        self.encoder = ControlFrameEncoder(cfg.data_width, cfg.ethertype)
        self.decoder = ControlFrameDecoder(cfg.data_width, cfg.ethertype)
        self.control_demux = ControlDemux()
        self.grant_framing = GrantFraming(slot_bits=self.arbiter.slot_bits)
        self.container_framing = ContainerFraming(queue_bits=cfg.queue_bits, credit_bits=cfg.credit_bits)


def connects(source, sink):
    wiring.connect(Module(), source, sink)


@pytest.fixture
def leaf():
    return Leaf()


# ---- pairs whose both ends exist on this branch --------------------------------------


def test_container_framing_to_sprayer(leaf):
    connects(leaf.container_framing.m_meta, leaf.sprayer.s_meta)


def test_control_demux_to_arbiter(leaf):
    connects(leaf.control_demux.m_req, leaf.arbiter.s_req)


def test_control_demux_to_manager(leaf):
    connects(leaf.control_demux.m_grant, leaf.manager.s_grant)


def test_decoder_to_control_demux(leaf):
    connects(leaf.decoder.m_ctl, leaf.control_demux.s_ctl)


def test_grant_framing_to_encoder(leaf):
    connects(leaf.grant_framing.m_ctl, leaf.encoder.s_ctl)


def test_manager_requests_to_encoder(leaf):
    connects(leaf.manager.m_req, leaf.encoder.s_ctl)


def test_arbiter_to_grant_framing(leaf):
    connects(leaf.arbiter.m_grant, leaf.grant_framing.s_grant)


def test_container_framing_to_voq(leaf):
    connects(leaf.container_framing.m_deq, leaf.voq.s_deq)


def test_parser_to_reorder(leaf):
    connects(leaf.parser.m_axis, leaf.reorder.s_axis)


def test_sprayer_layout_is_the_shared_record():
    assert SprayMetaLayout == interfaces.spray_descriptor_layout()


def test_stream_pieces_between_blocks(leaf):
    """The stream pieces fit where a leaf puts them: control frames ahead of data into
    the sprayer's control input, the parser's output split by header type (the
    parser's own header record as the select), a skid buffer on a record stream."""
    m = Module()
    mux = PacketMux(inputs=2, data_width=CFG.data_width)
    wiring.connect(m, leaf.encoder.m_axis, mux.s_axis[0])
    wiring.connect(m, mux.m_axis, leaf.sprayer.s_ctrl)
    route = Array([0, 1, 1, 2])  # DATA -> reorder, REQUEST/GRANT -> decoder, PROBE
    demux = PacketDemux(
        outputs=3,
        data_width=CFG.data_width,
        sel_layout=ParsedHeaderLayout,
        route=lambda h: Mux(h.gse & (h.type < 4), route[h.type[:2]], 3),
    )
    wiring.connect(m, leaf.parser.m_axis, demux.s_axis)
    wiring.connect(m, leaf.parser.m_hdr, demux.s_sel)
    wiring.connect(m, demux.m_axis[0], leaf.reorder.s_axis)
    wiring.connect(m, demux.m_axis[1], leaf.decoder.s_axis)
    skid = SkidBuffer(interfaces.request_record_layout())
    wiring.connect(m, leaf.control_demux.m_req, skid.s)
    wiring.connect(m, skid.m, leaf.arbiter.s_req)
    axis_skid = SkidBuffer(axis_beat_layout(CFG.data_width), sink="s_axis", source="m_axis")
    wiring.connect(m, leaf.reorder.m_axis, axis_skid.s_axis)
    assert GSEType.PROBE.value == 3


def test_a_mismatch_raises(leaf):
    """The check can fail: a framing cut for other widths does not join the sprayer's
    neighbours, nor a skid buffer of another record."""
    narrow = ContainerFraming(queue_bits=CFG.queue_bits + 1, credit_bits=CFG.credit_bits)
    with pytest.raises(wiring.ConnectionError):
        connects(leaf.container_framing.m_deq, narrow.s_rel)
    skid = SkidBuffer(data.StructLayout({"x": 3}))
    with pytest.raises(wiring.ConnectionError):
        connects(skid.m, leaf.arbiter.s_req)


# ---- pairs with an end on the manager/VOQ branches (rtl/interfaces.py records) -------


def test_manager_to_voq_packets(leaf):
    connects(leaf.manager.m_pkt, leaf.voq.s_meta)


def test_manager_to_container_framing(leaf):
    connects(leaf.manager.m_rel, leaf.container_framing.s_rel)


def test_voq_reports_to_container_framing(leaf):
    connects(leaf.voq.m_deq_done, leaf.container_framing.s_done)


def test_container_framing_reports_to_manager(leaf):
    connects(leaf.container_framing.m_done, leaf.manager.s_rel_done)


def test_voq_descriptors_to_container_framing(leaf):
    connects(leaf.voq.m_desc, leaf.container_framing.s_desc)


def test_host_ingress_record_to_manager(leaf):
    """The host ingress (destination lookup, tagger) is not built yet: its record."""
    connects(interfaces.packet_descriptor().create(path=("host_ingress",)), leaf.manager.s_pkt)
