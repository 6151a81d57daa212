"""GSETagger: push the GSE tag onto frames from a host port."""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from .frame_realigner import FrameRealigner
from .frame_window import FrameWindow
from .gse_header import (
    ETH_HEADER_BYTES,
    field_bits,
    reserved_bits,
    GSE_ETHERTYPE,
    GSE_HEADER_BYTES,
    GSE_VERSION,
    gse_header_layout,
    pack_header,
)
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["GSETagger", "TaggerHeaderLayout"]

#: The side channel: every header field but ``ver`` (always 1) and ``next_type``
#: (the frame's own EtherType).
TaggerHeaderLayout = gse_header_layout(omit=("ver", "next_type"))

MAC_BYTES = 12  # DA + SA: the bytes that stay in front of the tag


class GSETagger(wiring.Component):
    """Insert the GSE EtherType and header after the source MAC (a VLAN-like push).

    ``DA SA EtherType payload`` becomes ``DA SA 0x88B5 <GSE header> payload``, the
    header's last two bytes (``next_type``) being the original EtherType, so the
    frame grows by 18 bytes.

    Parameters:

    * ``data_width``: datapath width in bits, a power of two from 8 to 512.
    * ``ethertype``: the GSE EtherType (default 0x88B5).

    Interface:

    * ``s_axis``: plain Ethernet frames (no FCS).
    * ``s_hdr``: one header per frame, in frame order (fields of
      :data:`TaggerHeaderLayout`: ``type, flags, tc, tenant, src_node, dst_node, port,
      ttl, seq, len, dgsq``). For DATA, ``len`` is the original frame's length.
    * ``m_axis``: tagged frames.
    * ``stat_frames``: frames tagged; ``stat_drop_spoof``: frames that already carried
      the GSE EtherType (spoofing; dropped whole); ``stat_drop_runt``: frames shorter
      than 14 bytes (dropped whole); ``stat_err_frame``: frames marked bad in ``tuser``
      (passed on with the flag for the next buffer to drop).

    A dropped frame consumes its ``s_hdr`` entry too, so headers stay in step.

    Timing: the first beat waits for ``ceil(14 / W)`` beats of the frame (W = bytes per
    beat), one cycle for the verdict, and its header; then one output beat per clock
    with no bubble between back-to-back frames. Output is registered; latency
    ``ceil(14 / W) + 3`` cycles (the realigner's input slice, which keeps the window's
    ``ready`` and the ``s_hdr.ready`` it drives to registers, is one of them). The
    ``stat_*`` counters count one clock after their event.
    """

    def __init__(self, data_width=64, ethertype=GSE_ETHERTYPE):
        self.data_width = check_data_width(data_width)
        self.ethertype = ethertype
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "s_hdr": In(stream.Signature(TaggerHeaderLayout)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "stat_frames": Out(32),
                "stat_drop_spoof": Out(32),
                "stat_drop_runt": Out(32),
                "stat_err_frame": Out(32),
            }
        )

    def _const_head_bits(self):
        # The new head's bits that never vary: the EtherType, `ver`, reserved bits.
        base = 8 * (MAC_BYTES + 2)
        const = {
            8 * MAC_BYTES + 8 * (b // 8) + b % 8: (self.ethertype >> (8 * (1 - b // 8) + b % 8)) & 1
            for b in range(16)
        }
        for k, (byte, bit) in enumerate(field_bits("ver")):
            const[base + 8 * byte + bit] = (GSE_VERSION >> k) & 1
        for byte, bit in reserved_bits():
            if byte < GSE_HEADER_BYTES - 2:
                const[base + 8 * byte + bit] = 0
        return const

    def elaborate(self, platform):
        m = Module()
        # The verdict keeps the MAC addresses (the new head's first bytes) and the
        # drop reason with the frame.
        info = data.StructLayout({"mac": 8 * MAC_BYTES, "spoof": 1})
        m.submodules.window = window = FrameWindow(
            self.data_width, ETH_HEADER_BYTES, present_at=[ETH_HEADER_BYTES - 1], info_width=info.size
        )
        head_out = MAC_BYTES + 2 + GSE_HEADER_BYTES - 2
        m.submodules.realigner = realigner = FrameRealigner(
            self.data_width,
            MAC_BYTES,
            head_out,
            min_frame=ETH_HEADER_BYTES,
            head_const=self._const_head_bits(),
        )
        wiring.connect(m, wiring.flipped(self.s_axis), window.s_axis)

        cap_bytes = window.cap_bytes()
        cap = [cap_bytes.word_select(k, 8) for k in range(ETH_HEADER_BYTES)]
        judged = Signal(info)
        m.d.comb += [
            judged.mac.eq(cap_bytes[: 8 * MAC_BYTES]),
            judged.spoof.eq(window.cap_present[0] & (Cat(cap[13], cap[12]) == self.ethertype)),
            window.judge_info.eq(judged),
            window.judge_drop.eq(~window.cap_present[0] | judged.spoof),  # runt or spoofed
        ]
        verdict = Signal(info)
        m.d.comb += verdict.eq(window.head_info)
        spoof = verdict.spoof
        runt = window.head_drop & ~spoof

        fields = {name: self.s_hdr.payload[name] for name, _ in TaggerHeaderLayout}
        fields["ver"] = GSE_VERSION
        tag = pack_header(fields)[: GSE_HEADER_BYTES - 2]  # next_type stays in the frame
        new_head = (
            [verdict.mac.word_select(k, 8) for k in range(MAC_BYTES)]
            + [C(self.ethertype >> 8, 8), C(self.ethertype & 0xFF, 8)]
            + tag
        )

        m.d.comb += [
            window.verdict_ok.eq(self.s_hdr.valid),
            self.s_hdr.ready.eq(window.taken),
            realigner.s_axis.valid.eq(window.m_axis.valid),
            realigner.s_axis.payload.eq(window.m_axis.payload),
            window.m_axis.ready.eq(realigner.s_axis.ready),
            realigner.s_head.eq(Cat(*new_head)),
            realigner.s_bypass.eq(0),
        ]
        wiring.connect(m, realigner.m_axis, wiring.flipped(self.m_axis))

        # Counters lag their event by a clock (registered strobes): their enables stay
        # off the window's ready chain.
        ev_runt, ev_spoof, ev_frame, ev_err = (
            Signal(name=f"ev_{n}") for n in ("runt", "spoof", "frame", "err")
        )
        last_out = window.m_axis.valid & window.m_axis.ready & window.m_axis.payload.last
        m.d.sync += [
            ev_runt.eq(window.taken & runt),
            ev_spoof.eq(window.taken & spoof),
            ev_frame.eq(window.taken & ~window.head_drop),
            ev_err.eq(last_out & window.m_axis.payload.user),
        ]
        for ev, counter in [
            (ev_runt, self.stat_drop_runt),
            (ev_spoof, self.stat_drop_spoof),
            (ev_frame, self.stat_frames),
            (ev_err, self.stat_err_frame),
        ]:
            with m.If(ev):
                m.d.sync += counter.eq(counter + 1)
        return m


EXPORTS = [
    BlockSpec(
        name="tagger",
        module="gse_tagger",
        factory=lambda data_width, ethertype: GSETagger(data_width, ethertype),
        params={"data_width": 64, "ethertype": GSE_ETHERTYPE},
        description="GSE v1 tagger: inserts the GSE EtherType and 18-byte header after the source MAC",
    )
]
