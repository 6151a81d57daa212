"""FabricIngress: one uplink's receive side, frames from the spine sorted by type."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...header.gse_header import GSE_ETHERTYPE, GSEType
from ...header.parser import GSEParser
from ...lib.packet_demux import PacketDemux, select_layout
from ...lib.stream import AXIStreamSignature
from ...lib.pause_fifo import PauseFIFO
from ...lib.skid_buffer import SkidBuffer, skid_between

__all__ = ["FabricIngress"]


class FabricIngress(wiring.Component):
    """Uplink ``u``'s receive path: :class:`~opengse.rtl.lib.pause_fifo.PauseFIFO`
    (always ready, cut-through, pause) ->
    :class:`~opengse.rtl.header.parser.GSEParser` (checks, ``strip`` 0) -> demux.

    Parameters: ``data_width``, ``hosts`` H, ``store_depth`` (beats),
    ``xoff_bytes``/``xon_bytes``, ``ethertype``.

    Interface:

    * ``s_axis`` (in, always ready), ``pause`` (out): the link from the spine.
    * ``node_base`` (in, 16): this leaf's first node. A DATA frame whose
      ``dst_node - node_base`` is below H goes to ``m_data[dst_node - node_base]``;
      REQUEST and GRANT frames to ``m_ctl``; a PROBE pulses ``probe_rx`` (one clock, a
      register) two clocks after its last beat arrives (the input register, then the
      pulse's own), before the store (see ``_snoop_probes``), and is consumed after the
      parser. ``frame_rx`` pulses (one clock, a register) for the last beat of every
      good frame (``tuser[0]`` low) likewise, whatever its kind: the link monitor's
      proof that the link is alive. Everything else (DATA for another leaf, non-GSE frames) is
      dropped whole and counted in ``stat_drop_unrouted``.
    * Counters: ``stat_probes`` (a clock after ``probe_rx``), ``stat_drop_unrouted``,
      the store's ``store_stat_*`` and the parser's ``parser_stat_*``.

    Timing: an input register (1 clock), the store's (3 clocks, cut-through), the
    parser's (``ceil(32 / W) + 2`` clocks), a register slice on each of the parser's
    outputs (1 clock; the header's holds the output index, routed from ``m_hdr`` as it
    enters, so the demux works from a register), the demux's register: one beat per
    clock.
    """

    def __init__(
        self,
        data_width=64,
        hosts=4,
        store_bytes=16384,
        xoff_bytes=5632,
        xon_bytes=2816,
        ethertype=GSE_ETHERTYPE,
    ):
        self.hosts, self.ethertype = hosts, ethertype
        self.store = PauseFIFO(data_width, store_bytes, xoff_bytes, xon_bytes)
        self.parser = GSEParser(data_width, strip=0, ethertype=ethertype)
        sig = AXIStreamSignature(data_width)
        members = {
            "s_axis": In(sig),
            "pause": Out(1),
            "node_base": In(16),
            "m_data": Out(sig).array(hosts),
            "m_ctl": Out(sig),
            "probe_rx": Out(1),
            "frame_rx": Out(1),
            "stat_probes": Out(32),
            "stat_drop_unrouted": Out(32),
        }
        from ...lib.stat_ports import stat_members

        members.update(stat_members("store", self.store))
        members.update(stat_members("parser", self.parser))
        super().__init__(members)

    def elaborate(self, platform):
        from ...lib.stat_ports import forward_stats

        m = Module()
        H = self.hosts
        m.submodules.store = store = self.store
        m.submodules.parser = parser = self.parser
        node_base = self.node_base

        def route(h):
            local = (h.dst_node - node_base)[:16]
            data = (h.type == GSEType.DATA) & (local < H)
            ctl = (h.type == GSEType.REQUEST) | (h.type == GSEType.GRANT)
            probe = h.type == GSEType.PROBE
            return Mux(~h.gse, H + 2, Mux(data, local, Mux(ctl, H, Mux(probe, H + 1, H + 2))))

        sel_layout = select_layout((H + 2).bit_length())
        m.submodules.demux = demux = PacketDemux(H + 2, self.store.data_width, sel_layout=sel_layout)
        # the input beat registered before the store (always ready): the link's receive
        # side (a MAC's crossing FIFO) reaches the store's length and drop logic only
        # through flip-flops
        s = self.s_axis
        m.d.sync += [store.s_axis.valid.eq(s.valid), store.s_axis.payload.eq(s.payload)]
        m.d.comb += s.ready.eq(1)
        self._snoop_probes(m, store.s_axis)
        m.d.comb += self.pause.eq(store.pause)
        wiring.connect(m, store.m_axis, parser.s_axis)
        # register slices: the demux's outputs' ready does not run into the parser's
        # window, and the routing (a subtract and compares) is computed into the header
        # slice: the demux takes a registered output index
        skid_between(m, "parser_data_skid", parser.m_axis, demux.s_axis)
        m.submodules.route_skid = route_skid = SkidBuffer(sel_layout)
        m.d.comb += [
            route_skid.s.valid.eq(parser.m_hdr.valid),
            route_skid.s.payload.index.eq(route(parser.m_hdr.payload)),
            parser.m_hdr.ready.eq(route_skid.s.ready),
        ]
        wiring.connect(m, route_skid.m, demux.s_sel)
        for h in range(H):
            wiring.connect(m, demux.m_axis[h], wiring.flipped(self.m_data[h]))
        wiring.connect(m, demux.m_axis[H], wiring.flipped(self.m_ctl))
        m.d.comb += [demux.m_axis[H + 1].ready.eq(1), self.stat_drop_unrouted.eq(demux.stat_drop_unrouted)]
        forward_stats(m, self, "store", store)
        forward_stats(m, self, "parser", parser)
        return m

    def _snoop_probes(self, m, s):
        """``probe_rx``: a pulse (registered) for the last beat of each good frame on ``s``
        (the input register) with the GSE EtherType, ``ver`` 1 and ``type`` PROBE (frame
        bytes 12..14), seen as it arrives (before the store), so that a link whose frames
        wait behind a paused or busy output still counts as alive. The PROBE itself goes
        on through the store and is consumed after the parser."""
        bpb = self.store.data_width // 8
        want = {12: self.ethertype >> 8, 13: self.ethertype & 0xFF, 14: 0x10 | GSEType.PROBE.value}
        last_beat = 14 // bpb
        beat = Signal(range(last_beat + 2), name="snoop_beat")
        ok = Signal(init=1, name="snoop_ok")  # every byte checked so far matched
        hit = Signal(name="snoop_hit")  # and those of this beat
        conds = {}
        for k, value in want.items():
            conds.setdefault(k // bpb, []).append(s.payload.data.word_select(k % bpb, 8) == value)
        m.d.comb += hit.eq(ok)
        for b, goods in conds.items():
            all_good = goods[0]
            for g in goods[1:]:
                all_good = all_good & g
            with m.If(beat == b):
                m.d.comb += hit.eq(ok & all_good)
        with m.If(s.valid):
            with m.If(s.payload.last):
                m.d.sync += [beat.eq(0), ok.eq(1)]
            with m.Else():
                m.d.sync += ok.eq(hit)
                with m.If(beat <= last_beat):
                    m.d.sync += beat.eq(beat + 1)
        good_last = s.valid & s.payload.last & ~s.payload.user[0]
        # registered pulses: the byte compares stop here, not in the link monitor's
        # interval logic
        m.d.sync += [self.probe_rx.eq(good_last & (beat >= last_beat) & hit), self.frame_rx.eq(good_last)]
        with m.If(self.probe_rx):
            m.d.sync += self.stat_probes.eq(self.stat_probes + 1)
