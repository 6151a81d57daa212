"""EtherTypeSplit: one AXI4-Stream packet input onto two outputs by the frame's EtherType."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .packet_demux import PacketDemux
from .select_window import select_window
from .stream import AXIStreamSignature, check_data_width

__all__ = ["EtherTypeSplit"]


class EtherTypeSplit(wiring.Component):
    """Packet split by EtherType: frames whose bytes 12..13 (big-endian) equal
    ``ethertype`` go whole to ``m_axis[1]``, every other frame whole to ``m_axis[0]``.

    A :class:`~.packet_demux.PacketDemux` steers, but its select must be there with a
    packet's first beat, and the EtherType is in beat ``k = 13 // (data_width / 8)``
    (beat 1 at 64 bits). So the packet goes through an input register (so that the
    compare starts from registers) and a window of ``k + 2`` registered beats
    (:func:`~.select_window.select_window`); the select of each packet is made as its
    beat ``k`` enters the window and waits in a register FIFO of as many entries.

    Parameters: ``ethertype`` (16 bits), ``data_width`` (a power of two, 8..512),
    ``user_width``.

    Interface:

    * ``s_axis`` (in, AXI4-Stream): Ethernet frames, byte 0 (the destination MAC's
      first byte) in ``tdata[7:0]``. ``tready`` is one gate of registers: low only
      while the input register and the window are full (an output stalls).
    * ``m_axis[0]`` (out): frames of another EtherType, and frames too short to carry
      one (the packet ends before byte 13, or byte 13's ``tkeep`` bit is clear);
    * ``m_axis[1]`` (out): frames of ``ethertype``. ``tuser`` passes unchanged: a bad
      frame (``tuser[0]`` on its last beat) is steered like a good one and its outcome
      is the receiver's (the bit is known only at the end).

    Timing: 1 beat per clock, no idle clock between packets, when the outputs are
    ready; latency ``k + 3`` clocks (4 at 64 bits): the input register, the select
    needs beat ``k``, then the demux's output register. While the output a packet goes
    to stalls, the window fills and the input stalls (order on the input is kept); the split itself never
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
        # the input lands in a plain register (no multiplexer before it): the select
        # compare starts from it, not from the sender's logic (a MAC's FIFO read). It
        # moves on whenever the window has room, so its tready needs no skid.
        s = AXIStreamSignature(self.data_width, self.user_width).create(path=("in",))
        in_ready = ~s.valid | s.ready  # s.ready: the window's, a register
        m.d.comb += self.s_axis.ready.eq(in_ready)
        with m.If(in_ready):
            m.d.sync += s.valid.eq(self.s_axis.valid)
        with m.If(self.s_axis.valid & in_ready):
            m.d.sync += s.payload.eq(self.s_axis.payload)
        m.submodules.demux = demux = PacketDemux(2, self.data_width, self.user_width)
        for i in range(2):
            wiring.connect(m, demux.m_axis[i], wiring.flipped(self.m_axis[i]))

        win = select_window(m, s, demux, k, 1, name="win")
        m.d.comb += [demux.s_sel.valid.eq(win.sel_valid), demux.s_sel.payload.index.eq(win.sel)]

        # the EtherType, from beat k and (8-bit data) byte 12 kept from the beat before
        def byte(n):
            return s.payload.data[8 * (n % bpb) : 8 * (n % bpb) + 8]

        hi = Signal(8)  # byte 12, when it came in an earlier beat than byte 13 (8-bit data)
        hi_now = byte(12) if k12 == k else hi
        match = (Cat(byte(13), hi_now) == self.ethertype) & s.payload.keep[13 % bpb]
        m.d.comb += win.sel_in.eq((win.idx == k) & match)
        if k12 != k:
            with m.If(win.push & (win.idx == k12)):
                m.d.sync += hi.eq(byte(12))
        return m
