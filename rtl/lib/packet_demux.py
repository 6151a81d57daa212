"""PacketDemux: one AXI4-Stream packet input onto N outputs, by a select per packet."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from .stream import AXIStreamSignature, check_data_width

__all__ = ["PacketDemux", "select_layout", "EXPORTS"]


def select_layout(sel_bits):
    """The plain select record: ``index`` = the output a packet goes to."""
    return data.StructLayout({"index": sel_bits})


class PacketDemux(wiring.Component):
    """Packet demultiplexer: each packet whole to the output its select names.

    Parameters
    ----------
    outputs : int
        Number of outputs N (1..16).
    data_width, user_width : int
        Width of ``tdata`` (a power of two, 8..512) and ``tuser``.
    sel_layout : shape-like
        Payload of the select stream ``s_sel``; default :func:`select_layout` with
        enough bits for the value N (so values N.. exist and are dropped). Any record
        a block already sends with its packets fits, e.g. the parser's ``m_hdr``
        (:data:`~opengse.rtl.header.parser.ParsedHeaderLayout`): connect it with
        ``wiring.connect`` and give ``route``.
    route : callable or None
        ``route(sel)`` maps the select payload (a view of ``sel_layout``) to the output
        index (an Amaranth value); an index >= N drops the packet. Default: the
        ``index`` field. Example, by GSE type with non-GSE frames dropped:
        ``lambda h: Mux(h.gse & (h.type < 4), Array([0, 1, 1, 2])[h.type[:2]], 3)``.

    Interface
    ---------
    ``s_axis`` : ``In(AXIStreamSignature(data_width, user_width))``
        Packets.
    ``s_sel`` : ``In(stream.Signature(sel_layout))``
        One select per packet, in packet order, consumed with the packet's first beat
        (it must be valid no later than that beat: a packet's first beat waits for it).
    ``m_axis[0..N-1]`` : ``Out(AXIStreamSignature(data_width, user_width))``
        Outputs (exported as ``m_axis_<i>_t*``). ``tvalid`` and the beat are
        registers; ``s_axis.tready`` follows the addressed output's ``tready``
        through one gate.
    ``stat_drop_unrouted`` : ``Out(32)``
        Packets dropped whole because their select named no output. A dropped packet
        is taken at one beat per clock and never waits on an output.

    Timing
    ------
    1 beat per clock, no idle clock between back-to-back packets (the select of the
    next packet is looked at in the clock its first beat arrives). Latency 1 clock.
    The outputs share one output register: while the addressed output stalls, the
    input stalls (a packet for another output waits behind it: order on the input is
    kept).
    """

    def __init__(self, outputs=2, data_width=64, user_width=1, sel_layout=None, route=None):
        if not isinstance(outputs, int) or not 1 <= outputs <= 16:
            raise ValueError(f"outputs must be 1..16, not {outputs!r}")
        self.outputs = outputs
        self.data_width = check_data_width(data_width)
        if sel_layout is None:
            sel_layout = select_layout(outputs.bit_length())
        self.sel_layout = sel_layout
        self.route = route if route is not None else (lambda sel: sel.index)
        sig = AXIStreamSignature(data_width, user_width)
        super().__init__(
            {
                "s_axis": In(sig),
                "s_sel": In(stream.Signature(sel_layout)),
                "m_axis": Out(sig).array(outputs),
                "stat_drop_unrouted": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.outputs
        s, sel = self.s_axis, self.s_sel
        obits = max(1, n.bit_length())

        # Output register: one valid per output, a shared beat.
        o_valid = Signal(n)
        o_beat = Signal.like(self.m_axis[0].payload, name="o_beat")
        for i, mi in enumerate(self.m_axis):
            m.d.comb += [mi.valid.eq(o_valid[i]), mi.payload.eq(o_beat)]
        # o_valid is one-hot or 0, so the register is free when no output holds a beat
        # it could not pass on: a flat AND, not an OR of moves after an OR of valids
        free = Signal()
        m.d.comb += free.eq(Cat(~mi.valid | mi.ready for mi in self.m_axis).all())

        in_pkt = Signal()  # inside a packet: its output is `dest`
        dest = Signal(obits)
        drop = Signal()  # the packet in progress is being dropped
        first_dest = Signal(obits)
        routed = self.route(sel.payload)
        first_drop = Signal()
        m.d.comb += [first_dest.eq(routed), first_drop.eq(routed >= n)]

        cur_dest = Signal(obits)
        cur_drop = Signal()
        go = Signal()  # the input may move a beat this clock (given valid)
        with m.If(in_pkt):
            m.d.comb += [cur_dest.eq(dest), cur_drop.eq(drop), go.eq(drop | free)]
        with m.Else():
            m.d.comb += [
                cur_dest.eq(first_dest),
                cur_drop.eq(first_drop),
                go.eq(sel.valid & (first_drop | free)),
            ]
        m.d.comb += [s.ready.eq(go), sel.ready.eq(~in_pkt & go & s.valid)]
        take = Signal()
        m.d.comb += take.eq(s.valid & go)

        # per output: kept while it waits, or set by a beat taken for it (one-hot: a
        # beat is taken for a kept output only when it is dropped)
        load = Signal()
        m.d.comb += load.eq(s.valid & ~cur_drop & free & (in_pkt | sel.valid))
        for i, mi in enumerate(self.m_axis):
            m.d.sync += o_valid[i].eq((mi.valid & ~mi.ready) | (load & (cur_dest == i)))
        with m.If(load):
            m.d.sync += o_beat.eq(s.payload)
        with m.If(take):
            m.d.sync += [in_pkt.eq(~s.payload.last), dest.eq(cur_dest), drop.eq(cur_drop)]
            with m.If(s.payload.last & cur_drop):
                m.d.sync += self.stat_drop_unrouted.eq(self.stat_drop_unrouted + 1)
        return m


EXPORTS = [
    BlockSpec(
        name="packet_demux",
        module="gse_packet_demux",
        factory=PacketDemux,
        params={"outputs": 3, "data_width": 64, "user_width": 1},
        description="one AXI4-Stream input to N outputs, whole packets, by a select "
        "(s_sel_index) consumed with each packet's first beat; selects with "
        "no output drop the packet, counted",
    )
]
