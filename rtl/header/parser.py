"""GSEParser: check and parse the GSE header of frames from a fabric port."""

from amaranth import *
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from .frame_realigner import FrameRealigner
from .frame_window import FrameWindow
from ..lib.register_fifo import register_fifo
from .gse_header import (
    ETH_HEADER_BYTES,
    GSE_ETHERTYPE,
    GSE_FIELDS,
    GSE_HEADER_BYTES,
    GSE_VERSION,
    GSEType,
    TAGGED_HEADER_BYTES,
    reserved_bits,
    unpack_header,
)
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["GSEParser", "ParsedHeaderLayout"]

#: The header side channel: every GSE header field, plus ``gse`` (the frame carried
#: the GSE EtherType; else the GSE fields are zero), and the Ethernet header
#: (``eth_dst``, ``eth_src`` as 48-bit big-endian MACs, ``eth_type`` as on the wire).
ParsedHeaderLayout = data.StructLayout(
    {
        **{name: width for name, _o, _n, _l, width in GSE_FIELDS},
        "gse": 1,
        "eth_dst": 48,
        "eth_src": 48,
        "eth_type": 16,
    }
)

MAC_BYTES = 12


class Reason(enum.Enum, shape=3):
    PASS = 0
    RUNT = 1
    VER = 2
    TYPE = 3
    TTL = 4


class GSEParser(wiring.Component):
    """Parse, check and optionally strip the GSE tag.

    Parameters:

    * ``data_width``: datapath width in bits, a power of two from 8 to 512.
    * ``strip``: 1 removes the tag and restores the original frame (the original
      EtherType comes back from ``next_type``); 0 passes frames unchanged.
    * ``ethertype``: the GSE EtherType (default 0x88B5).

    Interface:

    * ``s_axis``: frames from the MAC (no FCS; ``tuser`` on the last beat = bad frame).
    * ``m_axis``: frames that passed the checks (stripped if ``strip``). Frames
      without the GSE EtherType pass unchanged, with ``m_hdr_gse`` = 0.
    * ``m_hdr``: one entry per frame on ``m_axis``, in the same order, valid no later
      than the frame's first beat (unless the consumer still holds an earlier header):
      every GSE header field (``m_hdr_<field>``),
      ``m_hdr_gse``, ``m_hdr_eth_dst``, ``m_hdr_eth_src``, ``m_hdr_eth_type``.
      Two entries are buffered; a consumer that does not take headers stalls frames.

    Drops (whole frame, nothing leaves; each counted): ``stat_drop_runt`` — ends
    before its 14-byte Ethernet header, or, with the GSE EtherType, before its 32-byte
    GSE header; ``stat_drop_ver`` — ``ver`` is not 1; ``stat_drop_type`` — reserved
    ``type``; ``stat_drop_ttl`` — ``ttl`` is 0. The first reason in this order counts.

    Flags (frame leaves with ``tuser`` set on its last beat): ``stat_err_len`` — a DATA
    frame whose ``len`` + 18 differs from its length; ``stat_err_frame`` — marked bad
    by the MAC. ``stat_frames`` / ``stat_other`` count GSE and non-GSE frames passed.

    Timing: a frame's first beat leaves ``ceil(32 / W) + 1`` cycles after it arrived
    (W = bytes per beat; the checks get a cycle of their own), plus one output
    register, plus (``strip``) the realigner's input slice; input at one beat per
    clock, no bubble between back-to-back frames; never stalls unless ``m_axis`` or
    ``m_hdr`` does. The ``stat_*`` counters count one clock after their event.
    """

    def __init__(self, data_width=64, strip=1, ethertype=GSE_ETHERTYPE):
        self.data_width = check_data_width(data_width)
        self.strip = int(strip)
        if self.strip not in (0, 1):
            raise ValueError(f"strip must be 0 or 1, not {strip!r}")
        self.ethertype = ethertype
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "m_hdr": Out(stream.Signature(ParsedHeaderLayout)),
                "stat_frames": Out(32),
                "stat_other": Out(32),
                "stat_drop_runt": Out(32),
                "stat_drop_ver": Out(32),
                "stat_drop_type": Out(32),
                "stat_drop_ttl": Out(32),
                "stat_err_len": Out(32),
                "stat_err_frame": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        # The verdict carries the parsed header, the drop reason and the DATA length
        # check, precomputed from `len` (the expected last beat's index and the lane of
        # its last byte), so that the end-of-frame check is no adder and no wide compare.
        W = self.data_width // 8
        LW = max(1, W.bit_length() - 1)
        check_layout = data.StructLayout({"on": 1, "last_idx": 16 - (W.bit_length() - 1), "lane": W})
        info = data.StructLayout({"hdr": ParsedHeaderLayout, "reason": Reason, "chk": check_layout, "one": 1})
        m.submodules.window = window = FrameWindow(
            self.data_width,
            TAGGED_HEADER_BYTES,
            present_at=[ETH_HEADER_BYTES - 1, TAGGED_HEADER_BYTES - 1],
            info_width=info.size,
            ignore_bits=[8 * (ETH_HEADER_BYTES + byte) + bit for byte, bit in reserved_bits()],
        )
        wiring.connect(m, wiring.flipped(self.s_axis), window.s_axis)

        # Judge the captured bytes (registers): a whole cycle for the checks.
        cap_bytes = window.cap_bytes()
        cap = [cap_bytes.word_select(k, 8) for k in range(TAGGED_HEADER_BYTES)]
        fields = unpack_header(cap[ETH_HEADER_BYTES:])
        eth_type = Cat(cap[13], cap[12])
        has_eth = window.cap_present[0]
        is_gse = Signal()
        m.d.comb += is_gse.eq(has_eth & (eth_type == self.ethertype))
        judged = Signal(info)
        for name, _o, _n, _l, _w in GSE_FIELDS:
            m.d.comb += judged.hdr[name].eq(Mux(is_gse, fields[name], 0))
        m.d.comb += [
            judged.hdr.gse.eq(is_gse),
            judged.hdr.eth_dst.eq(Cat(*reversed(cap[0:6]))),
            judged.hdr.eth_src.eq(Cat(*reversed(cap[6:12]))),
            judged.hdr.eth_type.eq(eth_type),
        ]
        short = ~has_eth | (is_gse & ~window.cap_present[1])
        bad_ver = is_gse & (fields["ver"] != GSE_VERSION)
        bad_type = is_gse & (fields["type"] > max(t.value for t in GSEType))
        bad_ttl = is_gse & (fields["ttl"] == 0)
        with m.If(short):
            m.d.comb += judged.reason.eq(Reason.RUNT)
        with m.Elif(bad_ver):
            m.d.comb += judged.reason.eq(Reason.VER)
        with m.Elif(bad_type):
            m.d.comb += judged.reason.eq(Reason.TYPE)
        with m.Elif(bad_ttl):
            m.d.comb += judged.reason.eq(Reason.TTL)
        with m.Else():
            m.d.comb += judged.reason.eq(Reason.PASS)
        # (a flat OR, not `reason != PASS`: the drop bit is on the window's ready chain)
        judge_drop = short | bad_ver | bad_type | bad_ttl
        expect_m1 = Signal(16)  # the frame's expected length less one
        m.d.comb += [
            expect_m1.eq(fields["len"] + (GSE_HEADER_BYTES - 1)),
            judged.chk.on.eq(is_gse & (fields["type"] == GSEType.DATA)),
            judged.chk.last_idx.eq(expect_m1 >> (W.bit_length() - 1)),
            judged.chk.lane.eq(C(1, W) << (expect_m1[:LW] if W > 1 else 0)),  # one-hot
            judged.one.eq(expect_m1 >> (W.bit_length() - 1) == 0),
            window.judge_info.eq(judged),
            window.judge_drop.eq(judge_drop),
        ]

        verdict = Signal(info)
        m.d.comb += verdict.eq(window.head_info)
        hdr = verdict.hdr
        drop = window.head_drop

        # Headers wait in two registers; "room" is a register, not a function of ready.
        hdr_push = Signal()
        hdr_pop = Signal()
        hdrs, hdr_valids = register_fifo(m, "hdr", 2, ParsedHeaderLayout, hdr_push, hdr, hdr_pop)
        m.d.comb += [
            window.verdict_ok.eq(drop | ~hdr_valids[1]),
            hdr_push.eq(window.taken & ~drop),
            self.m_hdr.valid.eq(hdr_valids[0]),
            self.m_hdr.payload.eq(hdrs[0]),
            hdr_pop.eq(self.m_hdr.valid & self.m_hdr.ready),
        ]

        # End-of-frame check of DATA `len`: the frame must end on the expected beat
        # (a down-count from the verdict's beat index, as a registered "this is the
        # beat" flag) with its last byte in the expected lane. The first beat, possibly
        # the last, uses the verdict itself.
        end_layout = data.StructLayout({"on": 1, "lane": W})  # what the last beat tests
        chk_r = Signal(end_layout)
        at_end_r = Signal()  # the head beat (not a first) is the expected last one
        past_r = Signal()  # ... it follows the expected last one (a last beat of no bytes)
        left_r = Signal(16 - (W.bit_length() - 1))
        first = window.m_first  # (only a judged first beat leaves: no need to ask more)
        chk = Signal(end_layout)
        at_end = Signal()
        v_end = Cat(verdict.chk.on, verdict.chk.lane)
        m.d.comb += [chk.eq(Mux(first, v_end, chk_r)), at_end.eq(Mux(first, verdict.one, at_end_r))]
        with m.If(window.taken):
            m.d.sync += [
                chk_r.eq(v_end),
                left_r.eq(verdict.chk.last_idx - 1),
                at_end_r.eq(verdict.chk.last_idx == 1),
                past_r.eq(verdict.one),
            ]
        with m.Elif(window.m_axis.valid & window.m_axis.ready):
            m.d.sync += [left_r.eq(left_r - 1), at_end_r.eq(left_r == 1), past_r.eq(at_end_r)]
        keep = window.m_axis.payload.keep
        tops = []  # per lane: the head beat's highest byte is there and is expected there
        for e in range(W):
            top = keep[e] & ~keep[e + 1 :].any() if e + 1 < W else keep[e]
            tops.append(top & chk.lane[e])
        lane_ok = Cat(*tops).any()  # (a reduction, not a chain of ORs: a shallow tree)
        # (a last beat with no bytes: the frame ended with the beat before; a first beat
        # never is one, it would be a runt)
        empty_ok = ~first & past_r & ~keep.any() & chk.lane[W - 1]
        len_error = Signal()
        m.d.comb += [len_error.eq(chk.on & ~((at_end & lane_ok) | empty_ok)), window.last_error.eq(len_error)]

        if self.strip:
            m.submodules.realigner = realigner = FrameRealigner(
                self.data_width, TAGGED_HEADER_BYTES - 2, MAC_BYTES, min_frame=TAGGED_HEADER_BYTES
            )
            macs = Cat(hdr.eth_src, hdr.eth_dst)  # big-endian: byte 0 is the top byte
            m.d.comb += [
                realigner.s_axis.valid.eq(window.m_axis.valid),
                realigner.s_axis.payload.eq(window.m_axis.payload),
                window.m_axis.ready.eq(realigner.s_axis.ready),
                realigner.s_head.eq(Cat(*[macs.word_select(11 - k, 8) for k in range(MAC_BYTES)])),
                realigner.s_bypass.eq(~hdr.gse),
            ]
            wiring.connect(m, realigner.m_axis, wiring.flipped(self.m_axis))
        else:
            # One register, so that a frame's header (pushed when its first beat leaves
            # the window) is never later than that beat.
            out = self.m_axis
            with m.If(~out.valid | out.ready):
                m.d.sync += [out.valid.eq(window.m_axis.valid), out.payload.eq(window.m_axis.payload)]
            m.d.comb += window.m_axis.ready.eq(~out.valid | out.ready)

        def bump(counter):
            return counter.eq(counter + 1)

        # Counters lag their event by a clock: the strobes are registered first, so
        # that no counter's enable hangs off the window's ready chain.
        ev = {
            k: Signal(name=f"ev_{k}")
            for k in ("runt", "ver", "type", "ttl", "frames", "other", "err_len", "err_frame")
        }
        taken, reason = window.taken, verdict.reason
        last_out = window.m_axis.valid & window.m_axis.ready & window.m_axis.payload.last
        m.d.sync += [
            ev["runt"].eq(taken & (reason == Reason.RUNT)),
            ev["ver"].eq(taken & (reason == Reason.VER)),
            ev["type"].eq(taken & (reason == Reason.TYPE)),
            ev["ttl"].eq(taken & (reason == Reason.TTL)),
            ev["frames"].eq(taken & (reason == Reason.PASS) & hdr.gse),
            ev["other"].eq(taken & (reason == Reason.PASS) & ~hdr.gse),
            ev["err_len"].eq(last_out & len_error),
            ev["err_frame"].eq(last_out & window.mac_error),
        ]
        for k, counter in [
            ("runt", self.stat_drop_runt),
            ("ver", self.stat_drop_ver),
            ("type", self.stat_drop_type),
            ("ttl", self.stat_drop_ttl),
            ("frames", self.stat_frames),
            ("other", self.stat_other),
            ("err_len", self.stat_err_len),
            ("err_frame", self.stat_err_frame),
        ]:
            with m.If(ev[k]):
                m.d.sync += bump(counter)
        return m


EXPORTS = [
    BlockSpec(
        name="parser",
        module="gse_parser",
        factory=lambda data_width, strip, ethertype: GSEParser(data_width, strip, ethertype),
        params={"data_width": 64, "strip": 1, "ethertype": GSE_ETHERTYPE},
        description="GSE v1 parser: checks the GSE header, puts its fields on m_hdr_*, "
        "optionally strips the tag",
    )
]
