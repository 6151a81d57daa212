"""Sprayer: a container never splits across uplinks, and its ``seq`` is the next one of
its destination.

Configuration (:data:`PARAMS`): 64-bit, 2 uplinks, a seq table of 2 nodes, round-robin.
The wrapper tells data from control frames by their first byte (an assumption on
content only: control frames start with 0xFF, data frames do not; the sprayer does not
look at it) and watches the uplinks as one stream (one output register serves them
all). It keeps the ``s_meta`` descriptors consumed (``last``, ``dst_node``) in a
:class:`ShadowQueue` and asserts, every clock:

* at most one uplink is offered a beat; every beat of a packet goes to the uplink of its
  first beat (packets never split);
* every data packet of a container goes to the container's uplink (containers never
  split), whatever ``healthy`` does meanwhile;
* the FIRST/LAST flags (frame byte 15) mark the container's first/last packet as the
  descriptors say; ``dst_node`` (bytes 20-21) is the container's;
* ``seq`` (bytes 24-25) is the same in every packet of a container, and one more per
  container for each destination (a shadow counter per seq-table entry, from 0 at reset).

Data packets are at least 4 beats (32 bytes: the tagged header); the inputs keep the
valid/ready rule (:func:`assume_stream_rules`: an offered beat or descriptor stays, unchanged, until
taken; without it the solver changes a waiting descriptor's ``dst_node`` under the seq
table's registered read); content, ``tkeep``, ``tuser``, ``healthy``, the descriptors'
fields and every ``tready`` are free; ``rst`` low after reset.
"""

from amaranth.hdl import Array, Assert, Assume, Cat, Cover, Elaboratable, Module, Mux, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach
from .streams import FrameTracker, ShadowQueue, assume_stream_rules, byte_of

__all__ = ["SprayerContainers", "PARAMS"]

PARAMS = dict(data_width=64, uplinks=2, nodes=2, policy=0)
CTRL_MARK = 0xFF


class _Merged:
    """The uplinks seen as one stream (the sprayer has one output register)."""

    def __init__(self, m, dut):
        from opengse.rtl.lib.stream import AXIStreamSignature

        U = dut.uplinks
        self.axis = AXIStreamSignature(dut.data_width).flip().create()
        valids = Cat(dut.m_axis[u].valid for u in range(U))
        self.up = Signal(range(U))
        for u in range(U):
            with m.If(dut.m_axis[u].valid):
                m.d.comb += self.up.eq(u)
        m.d.comb += [
            self.axis.valid.eq(valids.any()),
            self.axis.ready.eq((valids & Cat(dut.m_axis[u].ready for u in range(U))).any()),
            self.axis.payload.eq(dut.m_axis[0].payload),
        ]
        m.d.comb += Assert((valids & (valids - 1)[: len(valids)]) == 0, "a beat offered to two uplinks")


class SprayerContainers(Elaboratable):
    def __init__(self, cover=False, **params):
        from opengse.rtl.pktc.sprayer import ContainerSprayer

        self.cover = cover
        self.dut = ContainerSprayer(**{**PARAMS, **params})
        self.bpb = self.dut.data_width // 8

    def _byte(self, trk, axis, k):
        beat, lane = divmod(k, self.bpb)
        return trk.at(beat), byte_of(axis, lane)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        nbits = (dut.nodes - 1).bit_length()
        m.d.comb += Assume(~ResetSignal())
        s, c, meta = dut.s_axis, dut.s_ctrl, dut.s_meta
        for x, name in ((s, "s_axis"), (c, "s_ctrl"), (meta, "s_meta")):
            assume_stream_rules(m, x, name)
        ti = FrameTracker(m, s, name="in")
        tc = FrameTracker(m, c, name="ctl")
        with m.If(ti.at(0)):
            m.d.comb += Assume(byte_of(s, 0) != CTRL_MARK)
        with m.If(tc.at(0)):
            m.d.comb += Assume(byte_of(c, 0) == CTRL_MARK)
        with m.If(s.valid & s.payload.last):
            m.d.comb += Assume(ti.beat >= 3)

        desc = ShadowQueue(m, 17, 3, name="spray_descriptors")
        desc.push(m, meta.valid & meta.ready, Cat(meta.payload.last, meta.payload.dst_node))

        o = _Merged(m, dut)
        to = FrameTracker(m, o.axis, name="out")
        # the packet on the output: its uplink, control or data
        pkt_up, pkt_ctl = Signal.like(o.up), Signal()
        first_beat = to.at(0)
        is_ctl = Mux(first_beat, byte_of(o.axis, 0) == CTRL_MARK, pkt_ctl)
        with m.If(to.fire & first_beat):
            m.d.sync += [pkt_up.eq(o.up), pkt_ctl.eq(is_ctl)]
        with m.If(o.axis.valid & ~first_beat):
            m.d.comb += Assert(o.up == pkt_up, "a packet split across uplinks")

        # containers
        in_cont, cont_up, cont_dst = Signal(), Signal.like(o.up), Signal(16)
        cont_seq, exp_last, exp_first = Signal(16), Signal(), Signal()
        seqc = Array(Signal(16, name=f"seq_next{k}") for k in range(dut.nodes))
        data_start = to.fire & first_beat & ~is_ctl
        desc.pop(m, data_start, "a data packet left without a descriptor")
        d_last, d_dst = desc.head[0], desc.head[1:17]
        with m.If(data_start):
            m.d.sync += [exp_last.eq(d_last), exp_first.eq(~in_cont), in_cont.eq(~d_last)]
            with m.If(~in_cont):
                m.d.sync += [cont_up.eq(o.up), cont_dst.eq(d_dst)]
            with m.Else():
                m.d.comb += Assert(o.up == cont_up, "a container split across uplinks")
        data_beat = o.axis.valid & ~is_ctl
        at, b = self._byte(to, o.axis, 15)
        with m.If(data_beat & at):
            m.d.comb += [
                Assert(b[0] == exp_first, "FIRST flag wrong"),
                Assert(b[1] == exp_last, "LAST flag wrong"),
            ]
        at20, b20 = self._byte(to, o.axis, 20)
        _at21, b21 = self._byte(to, o.axis, 21)
        with m.If(data_beat & at20):
            m.d.comb += Assert(Cat(b21, b20) == cont_dst, "dst_node is not the container's")
        at24, b24 = self._byte(to, o.axis, 24)
        _at25, b25 = self._byte(to, o.axis, 25)
        seq_out = Cat(b25, b24)
        with m.If(data_beat & at24):
            with m.If(exp_first):
                m.d.comb += Assert(seq_out == seqc[cont_dst[:nbits]], "container seq is not the next one")
            with m.Else():
                m.d.comb += Assert(seq_out == cont_seq, "seq changed inside a container")
        with m.If(to.fire & at24 & ~is_ctl & exp_first):
            m.d.sync += [seqc[cont_dst[:nbits]].eq(seq_out + 1), cont_seq.eq(seq_out)]
        if self.cover:
            m.d.comb += [
                Cover(data_beat & at24 & exp_first & (seqc[cont_dst[:nbits]] != 0), "a second container"),
                Cover(data_beat & at24 & ~exp_first, "a second packet of one container"),
            ]
        return m


def _build(cover=False):
    top = SprayerContainers(cover=cover)
    return top, inputs_of(top.dut)


WHOLE = register(
    Property(
        name="sprayer_containers_whole",
        block="sprayer",
        asserts="packets and containers never split across uplinks (whatever healthy does); "
        "FIRST/LAST/dst_node as the descriptors say; seq equal within a container and +1 per "
        "container per destination from 0 (64-bit, 2 uplinks, 2 nodes, round-robin)",
        assumptions="rst low after reset; inputs keep the valid/ready rule (held until taken, "
        "unchanged); data packets >= 4 beats; control frames start with 0xFF, data frames do "
        "not (content marker only); everything else free",
        mode="bmc",
        depth=14,
        build=_build,
        options={"engine": "smtbmc yices"},
        fast=False,
        bounded_why="the shadow seq counters are not inductive relative to the seq table RAM; "
        "depth 14 covers the table clear and three 4-beat packets: a second container to one "
        "destination and a second packet of one container (the cover check reaches both)",
    )
)
register_reach(
    WHOLE, "a second container to one destination, and a second packet of a container, check their seq"
)
