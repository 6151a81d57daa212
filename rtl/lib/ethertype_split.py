"""EtherTypeSplit: one AXI4-Stream packet input onto two outputs by the frame's EtherType."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .packet_demux import PacketDemux
from .register_fifo import register_fifo
from .stream import AXIStreamSignature, check_data_width

__all__ = ["EtherTypeSplit"]


class EtherTypeSplit(wiring.Component):
    """Packet split by EtherType: frames whose bytes 12..13 (big-endian) equal
    ``ethertype`` go whole to ``m_axis[1]``, every other frame whole to ``m_axis[0]``.

    A :class:`~.packet_demux.PacketDemux` steers, but its select must be there with a
    packet's first beat, and the EtherType is in beat ``k = 13 // (data_width / 8)``
    (beat 1 at 64 bits). So the packet goes through a window of ``k + 2`` registered
    beats (:func:`~.register_fifo.register_fifo`); the select of each packet is made as
    its beat ``k`` enters the window and waits in a register FIFO of as many entries
    (a packet has at least one beat in the window from its select's push to its pop).

    Parameters: ``ethertype`` (16 bits), ``data_width`` (a power of two, 8..512),
    ``user_width``.

    Interface:

    * ``s_axis`` (in, AXI4-Stream): Ethernet frames, byte 0 (the destination MAC's
      first byte) in ``tdata[7:0]``. ``tready`` is a register: low only while the
      window is full (an output stalls).
    * ``m_axis[0]`` (out): frames of another EtherType, and frames too short to carry
      one (the packet ends before byte 13, or byte 13's ``tkeep`` bit is clear);
    * ``m_axis[1]`` (out): frames of ``ethertype``. ``tuser`` passes unchanged: a bad
      frame (``tuser[0]`` on its last beat) is steered like a good one and its outcome
      is the receiver's (the bit is known only at the end).

    Timing: 1 beat per clock, no idle clock between packets, when the outputs are
    ready; latency ``k + 2`` clocks (3 at 64 bits): the select needs beat ``k``, then
    the demux's output register. While the output a packet goes to stalls, the window
    fills and the input stalls (order on the input is kept); the split itself never
    waits for anything but an output's ``tready``, so it stalls the input no longer
    than that output does.
    """

    def __init__(self, ethertype, data_width=64, user_width=1):
        if not isinstance(ethertype, int) or not 0 <= ethertype < 1 << 16:
            raise ValueError(f"ethertype must be a 16-bit value, not {ethertype!r}")
        self.ethertype = ethertype
        self.data_width = check_data_width(data_width)
        self.user_width = user_width
        sig = AXIStreamSignature(data_width, user_width)
        super().__init__({"s_axis": In(sig), "m_axis": Out(sig).array(2)})

    def elaborate(self, platform):
        m = Module()
        bpb = self.data_width // 8
        k, k12 = 13 // bpb, 12 // bpb  # the beats holding bytes 13 and 12
        depth = k + 2
        s = self.s_axis
        m.submodules.demux = demux = PacketDemux(2, self.data_width, self.user_width)
        for i in range(2):
            wiring.connect(m, demux.m_axis[i], wiring.flipped(self.m_axis[i]))

        push, pop = Signal(), Signal()
        beats, beat_valid = register_fifo(m, "win", depth, s.payload.shape(), push, s.payload, pop)
        sel_push, sel_in, sel_pop = Signal(), Signal(), Signal()
        sels, sel_valid = register_fifo(m, "sel", depth, 1, sel_push, sel_in, sel_pop)
        m.d.comb += [
            s.ready.eq(~beat_valid[-1] & ~sel_valid[-1]),
            push.eq(s.valid & s.ready),
            demux.s_axis.valid.eq(beat_valid[0]),
            demux.s_axis.payload.eq(beats[0]),
            pop.eq(demux.s_axis.valid & demux.s_axis.ready),
            demux.s_sel.valid.eq(sel_valid[0]),
            demux.s_sel.payload.index.eq(sels[0]),
            sel_pop.eq(demux.s_sel.valid & demux.s_sel.ready),
        ]

        # the input side: each packet's beat index (saturating past k) and its EtherType
        def byte(n):
            return s.payload.data[8 * (n % bpb) : 8 * (n % bpb) + 8]

        idx = Signal(range(k + 2))
        hi = Signal(8)  # byte 12, when it came in an earlier beat than byte 13 (8-bit data)
        hi_now = byte(12) if k12 == k else hi
        match = Signal()
        m.d.comb += [
            match.eq((Cat(byte(13), hi_now) == self.ethertype) & s.payload.keep[13 % bpb]),
            sel_push.eq(push & ((idx == k) | ((idx < k) & s.payload.last))),
            sel_in.eq((idx == k) & match),
        ]
        with m.If(push):
            with m.If(s.payload.last):
                m.d.sync += idx.eq(0)
            with m.Elif(idx <= k):
                m.d.sync += idx.eq(idx + 1)
            if k12 != k:
                with m.If(idx == k12):
                    m.d.sync += hi.eq(byte(12))
        return m
