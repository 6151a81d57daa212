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

    Timing: one beat per clock; while a decoded header waits on ``m_ctl`` the input
    stalls at the next frame's last beat.
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
        nbytes = Signal(range(TAGGED_HEADER_BYTES + W + 1))  # saturating byte count
        beat = Signal(range(head_beats + 1))
        out_valid = Signal()
        out_hdr = Signal(ControlHeaderLayout)

        beat_bytes = Signal(range(W + 1))
        keep = self.s_axis.payload.keep
        m.d.comb += beat_bytes.eq(sum(keep[k] for k in range(W)))

        # Header bytes as they stand after this beat (the last beat may complete them).
        cur = []
        for k in range(head_beats * W):
            b, off = divmod(k, W)
            byte_now = self.s_axis.payload.data[8 * off : 8 * off + 8]
            cur.append(Mux(beat == b, byte_now, head[k]))
        gse = cur[ETH_HEADER_BYTES:TAGGED_HEADER_BYTES]
        f = unpack_header(gse)
        etype = Cat(cur[13], cur[12])
        total = Signal(range(TAGGED_HEADER_BYTES + 2 * W + 1))
        m.d.comb += total.eq(nbytes + beat_bytes)

        is_gse = etype == self.ethertype
        ctl = (f["type"] == GSEType.REQUEST.value) | (f["type"] == GSEType.GRANT.value)
        known = ctl | (f["type"] == GSEType.DATA.value) | (f["type"] == GSEType.PROBE.value)
        short = total < TAGGED_HEADER_BYTES
        # (shorter than the Ethernet header: bytes 12-13 are not the frame's, so it is
        # not GSE whatever they hold)
        no_etype = total < ETH_HEADER_BYTES
        err = self.s_axis.payload.user[0]

        accept_last = Signal()
        m.d.comb += self.s_axis.ready.eq(~(self.s_axis.payload.last & out_valid))
        m.d.comb += accept_last.eq(self.s_axis.valid & self.s_axis.ready & self.s_axis.payload.last)
        with m.If(self.s_axis.valid & self.s_axis.ready):
            for k in range(head_beats * W):
                b, off = divmod(k, W)
                with m.If(beat == b):
                    m.d.sync += head[k].eq(self.s_axis.payload.data[8 * off : 8 * off + 8])
            m.d.sync += beat.eq(Mux(beat == head_beats, beat, beat + 1))
            m.d.sync += nbytes.eq(Mux(total > TAGGED_HEADER_BYTES, TAGGED_HEADER_BYTES + 1, total))
            with m.If(self.s_axis.payload.last):
                m.d.sync += [beat.eq(0), nbytes.eq(0)]

        with m.If(self.m_ctl.ready):
            m.d.sync += out_valid.eq(0)
        with m.If(accept_last):
            with m.If(err):
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
