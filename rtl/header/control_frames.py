"""REQUEST/GRANT control frames: encoder and decoder (brief sections 3 and 4).

A control frame is ``DA(6) SA(6) EtherType(2) GSE header(18)`` padded with zeros to
60 bytes (no FCS). The header bytes come from :func:`~opengse.rtl.header.gse_header.pack_header`
and are read back with :func:`~opengse.rtl.header.gse_header.unpack_header`: the format is
defined once, there.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from .gse_header import (
    CONTROL_FRAME_BYTES,
    ETH_HEADER_BYTES,
    GSE_ETHERTYPE,
    GSE_VERSION,
    TAGGED_HEADER_BYTES,
    GSEType,
    pack_header,
    unpack_header,
)
from ..interfaces import ControlHeaderLayout  # the header fields a control frame carries
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["ControlFrameEncoder", "ControlFrameDecoder", "ControlHeaderLayout"]


class ControlFrameEncoder(wiring.Component):
    """Control frames from header fields.

    Interface: ``s_ctl`` (:data:`ControlHeaderLayout`: ``type, flags, tc, tenant,
    src_node, dst_node, port, ttl, seq, len, dgsq, next_type``), ``mac_da``/``mac_sa`` (48-bit
    MAC addresses, first byte on the wire in bits 47:40), ``m_axis`` (60-byte frames).

    Parameters: ``data_width`` (bits), ``ethertype``.

    Timing: ``ceil(60 / W)`` beats per frame at one beat per clock with no bubble
    between frames; the header is taken when the previous frame's last beat leaves.
    """

    def __init__(self, data_width=64, ethertype=GSE_ETHERTYPE):
        self.data_width = check_data_width(data_width)
        self.ethertype = ethertype
        super().__init__(
            {
                "s_ctl": In(stream.Signature(ControlHeaderLayout)),
                "mac_da": In(48),
                "mac_sa": In(48),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "stat_frames": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        W = self.data_width // 8
        n_beats = -(-CONTROL_FRAME_BYTES // W)
        hdr = Signal(ControlHeaderLayout)
        busy = Signal()
        beat = Signal(range(max(2, n_beats)))

        fields = {name: hdr[name] for name, _ in ControlHeaderLayout}
        fields["ver"] = GSE_VERSION
        gse = pack_header(fields)
        frame = []
        for k in range(6):
            frame.append(self.mac_da[8 * (5 - k) : 8 * (6 - k)])
        for k in range(6):
            frame.append(self.mac_sa[8 * (5 - k) : 8 * (6 - k)])
        frame += [Const(self.ethertype >> 8, 8), Const(self.ethertype & 0xFF, 8)]
        frame += gse
        frame += [Const(0, 8)] * (n_beats * W - len(frame))

        last_beat = beat == n_beats - 1
        take = Signal()
        m.d.comb += take.eq(~busy | (self.m_axis.ready & last_beat))
        m.d.comb += self.s_ctl.ready.eq(take)
        with m.If(self.s_ctl.valid & take):
            m.d.sync += [hdr.eq(self.s_ctl.payload), busy.eq(1), beat.eq(0)]
        with m.Elif(take):
            m.d.sync += busy.eq(0)
        with m.If(busy & self.m_axis.ready & ~last_beat):
            m.d.sync += beat.eq(beat + 1)
        with m.If(busy & self.m_axis.ready & last_beat):
            m.d.sync += self.stat_frames.eq(self.stat_frames + 1)

        beats = [Cat(frame[b * W : (b + 1) * W]) for b in range(n_beats)]
        tail = CONTROL_FRAME_BYTES - (n_beats - 1) * W
        m.d.comb += [
            self.m_axis.valid.eq(busy),
            self.m_axis.payload.data.eq(Array(beats)[beat]),
            self.m_axis.payload.keep.eq(Mux(last_beat, (1 << tail) - 1, (1 << W) - 1)),
            self.m_axis.payload.last.eq(last_beat),
            self.m_axis.payload.user.eq(0),
        ]
        return m


class ControlFrameDecoder(wiring.Component):
    """Header fields of REQUEST and GRANT frames; everything else dropped and counted.

    Interface: ``s_axis`` (frames, no FCS), ``m_ctl`` (:data:`ControlHeaderLayout`, one
    entry per good control frame, handed over after the frame's last beat).

    Counters: ``stat_ctl`` (good REQUEST/GRANT frames), ``stat_drop_other`` (not GSE,
    including frames too short to carry an EtherType, or DATA/PROBE: not for this
    decoder), ``stat_drop_malformed`` (GSE, but wrong ``ver``, reserved ``type``, ``ttl``
    0, or shorter than 32 bytes), ``stat_drop_err`` (``tuser`` error).

    Timing: one beat per clock. Two stages: the beats fill a header register; the
    frame is judged from registers in the clock after its last beat, and its header
    is on ``m_ctl`` from the clock after that (2 clocks after the last beat). While a
    decoded header waits on ``m_ctl`` the input stalls at the next frame's last beat
    (and, once that frame is taken, until its decision is made).
    """

    def __init__(self, data_width=64, ethertype=GSE_ETHERTYPE):
        self.data_width = check_data_width(data_width)
        self.ethertype = ethertype
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "m_ctl": Out(stream.Signature(ControlHeaderLayout)),
                "stat_ctl": Out(32),
                "stat_drop_other": Out(32),
                "stat_drop_malformed": Out(32),
                "stat_drop_err": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        W = self.data_width // 8
        head_beats = -(-TAGGED_HEADER_BYTES // W)
        head = [Signal(8, name=f"head{k}") for k in range(head_beats * W)]
        # the byte count only matters below TAGGED_HEADER_BYTES (32, a power of two): the
        # bytes so far while fewer, and a flag once there; no saturating compare
        tb = TAGGED_HEADER_BYTES.bit_length() - 1
        assert 1 << tb == TAGGED_HEADER_BYTES
        nbytes = Signal(tb)  # bytes of the frame so far, while `full` is 0
        full = Signal()  # TAGGED_HEADER_BYTES or more bytes of the frame so far
        beat = Signal(range(head_beats + 1))
        out_valid = Signal()
        out_hdr = Signal(ControlHeaderLayout)

        beat_bytes = Signal(range(W + 1))
        keep = self.s_axis.payload.keep
        m.d.comb += beat_bytes.eq(_popcount([keep[k] for k in range(W)]))

        # Stage 1, each beat: its header bytes into `head`, the byte count. At the last
        # beat the frame's length and error flag are registered and `pend` is set.
        total = Signal(range(TAGGED_HEADER_BYTES + W))
        total_full = Signal()
        m.d.comb += [total.eq(nbytes + beat_bytes), total_full.eq(full | total[tb:].any())]
        pend = Signal()  # a frame's last beat was taken: stage 2 decides it
        p_total = Signal(tb)  # its length, if below TAGGED_HEADER_BYTES
        p_full = Signal()  # its length is at least TAGGED_HEADER_BYTES
        p_err = Signal()
        # the header bytes in `head` must stay until stage 2 has read them: while a
        # decision waits for the output register, no beat is taken; otherwise only a
        # last beat waits for it (one header on m_ctl at a time)
        s = self.s_axis
        m.d.comb += s.ready.eq(~(out_valid & (s.payload.last | pend)))
        with m.If(s.valid & s.ready):
            for k in range(head_beats * W):
                b, off = divmod(k, W)
                with m.If(beat == b):
                    m.d.sync += head[k].eq(s.payload.data[8 * off : 8 * off + 8])
            m.d.sync += beat.eq(Mux(beat == head_beats, beat, beat + 1))
            m.d.sync += [nbytes.eq(total[:tb]), full.eq(total_full)]
            with m.If(s.payload.last):
                m.d.sync += [beat.eq(0), nbytes.eq(0), full.eq(0)]
                m.d.sync += [p_total.eq(total[:tb]), p_full.eq(total_full), p_err.eq(s.payload.user[0])]

        # Stage 2, the clock after (or once the output register is free): the decision
        # from registers only. Bytes past the frame's end in `head` are stale; `short`
        # covers them.
        gse = head[ETH_HEADER_BYTES:TAGGED_HEADER_BYTES]
        f = unpack_header(gse)
        etype = Cat(head[13], head[12])
        is_gse = etype == self.ethertype
        ctl = (f["type"] == GSEType.REQUEST.value) | (f["type"] == GSEType.GRANT.value)
        known = ctl | (f["type"] == GSEType.DATA.value) | (f["type"] == GSEType.PROBE.value)
        short = ~p_full
        # (shorter than the Ethernet header: bytes 12-13 are not the frame's, so it is
        # not GSE whatever they hold)
        no_etype = ~p_full & (p_total < ETH_HEADER_BYTES)
        decide = Signal()
        m.d.comb += decide.eq(pend & ~out_valid)

        with m.If(self.m_ctl.ready):
            m.d.sync += out_valid.eq(0)
        with m.If(decide):
            m.d.sync += pend.eq(0)
        with m.If(s.valid & s.ready & s.payload.last):
            m.d.sync += pend.eq(1)
        with m.If(decide):
            with m.If(p_err):
                m.d.sync += self.stat_drop_err.eq(self.stat_drop_err + 1)
            with m.Elif(short & (no_etype | ~is_gse)):
                m.d.sync += self.stat_drop_other.eq(self.stat_drop_other + 1)
            with m.Elif(short):
                m.d.sync += self.stat_drop_malformed.eq(self.stat_drop_malformed + 1)
            with m.Elif(~is_gse):
                m.d.sync += self.stat_drop_other.eq(self.stat_drop_other + 1)
            with m.Elif((f["ver"] != GSE_VERSION) | ~known | (f["ttl"] == 0)):
                m.d.sync += self.stat_drop_malformed.eq(self.stat_drop_malformed + 1)
            with m.Elif(~ctl):
                m.d.sync += self.stat_drop_other.eq(self.stat_drop_other + 1)
            with m.Else():
                m.d.sync += [self.stat_ctl.eq(self.stat_ctl + 1), out_valid.eq(1)]
                for name, _ in ControlHeaderLayout:
                    m.d.sync += out_hdr[name].eq(f[name])
        m.d.comb += [self.m_ctl.valid.eq(out_valid), self.m_ctl.payload.eq(out_hdr)]
        return m


def _popcount(bits):
    """The number of set bits, as a balanced adder tree (depth log2 of the count)."""
    while len(bits) > 1:
        pairs = [bits[k] + bits[k + 1] for k in range(0, len(bits) - 1, 2)]
        bits = pairs + bits[len(bits) - len(bits) % 2 :]
    return bits[0]


EXPORTS = [
    BlockSpec(
        name="ctl_encoder",
        module="gse_ctl_encoder",
        factory=ControlFrameEncoder,
        params={"data_width": 64, "ethertype": GSE_ETHERTYPE},
        description="GSE REQUEST/GRANT control frame encoder (60-byte padded frames)",
    ),
    BlockSpec(
        name="ctl_decoder",
        module="gse_ctl_decoder",
        factory=ControlFrameDecoder,
        params={"data_width": 64, "ethertype": GSE_ETHERTYPE},
        description="GSE REQUEST/GRANT control frame decoder (header fields out, others dropped)",
    ),
]
