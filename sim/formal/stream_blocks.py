"""Stream rules of the small blocks: skid buffer, packet mux, packet demux, and the
framing blocks (container framing, grant framing).

The valid/ready rule (AXI4-Stream and ``amaranth.lib.stream``): once ``valid`` is
offered it stays up, with the payload unchanged, until ``ready`` takes it. Every
wrapper assumes it on the block's inputs (:func:`~.streams.assume_stream_rules`) and
asserts it on the block's outputs (:func:`assert_stream_rules`).

Loss, duplication and order are checked with self-describing beats: the wrapper
assumes each beat taken at an input carries, in its data, the count of beats taken
before it there (mod 16; an assumption on content only: the blocks move data without
looking at it), and asserts that the beats leaving carry the counts in order, none
skipped or repeated. Packet boundaries: the beat's ``last`` is copied into its data
too, and each beat of the mux's output names the input it came from, so a packet is
seen to come out whole from one input.

* ``skid_buffer_in_order`` (64-bit AXI4-Stream skid): no beat lost, duplicated or
  reordered; occupancy <= 2 (``s_axis_tready`` is low exactly when two beats are
  held); output rule.
* ``packet_mux_whole_packets`` (2 inputs, round-robin, and 3 inputs, strict
  priority): per input, beats leave in order, none lost or duplicated; a packet
  leaves whole, from one input, not interleaved with another; ``stat_packets``
  counts the packets that left; output rule.
* ``packet_demux_in_order`` (3 outputs): every beat leaves on the output its packet's
  select names, in input order (none lost or duplicated), ``last`` kept; output rules.
* ``container_framing_stream_rules``: output rules on ``m_deq`` and ``m_done``.
  Not on ``m_meta``: its ``valid`` can drop while stalled (found by this wrapper: a
  descriptor on offer, then the head release's report says it sent nothing, so the
  head is skipped and the descriptor now belongs to the next release). The VOQ buffer
  and the DGSQ manager never produce that order: sim/formal/container_framing.py
  proves the rule on ``m_meta`` under their rules (docs/formal.md).
* ``grant_framing_stream_rules``: output rule on ``m_ctl`` (``node_id`` and ``port``
  held, as configuration is).
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal, Value

from .registry import Property, inputs_of, register, register_reach
from .streams import assume_packet_keep, assume_stream_rules

__all__ = ["assert_stream_rules", "SkidInOrder", "MuxWholePackets", "DemuxInOrder", "OutputRules"]

SEQ = 4  # bits of the beat counts carried in the data


def assert_stream_rules(m, s, name="out"):
    """Assert the valid/ready rule on an output stream ``s``."""
    payload = Value.cast(s.payload)
    stalled = Signal(name=f"{name}_stalled")
    was = Signal(len(payload), name=f"{name}_was")
    m.d.sync += [stalled.eq(s.valid & ~s.ready), was.eq(payload)]
    with m.If(stalled):
        m.d.comb += Assert(s.valid, f"{name}: valid dropped before ready")
        m.d.comb += Assert(payload == was, f"{name}: payload changed while stalled")


def _counter(m, cond, name):
    c = Signal(SEQ, name=name)
    with m.If(cond):
        m.d.sync += c.eq(c + 1)
    return c


class SkidInOrder(Elaboratable):
    def __init__(self, data_width=64, cover=False, max_held=2):
        from opengse.rtl.lib.skid_buffer import _axis_skid_buffer

        self.dut = _axis_skid_buffer(data_width=data_width)
        self.cover, self.max_held = cover, max_held

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        s, o = dut.s_axis, dut.m_axis
        m.d.comb += Assume(~ResetSignal())
        assume_stream_rules(m, s, "s_axis")
        n_in = _counter(m, s.valid & s.ready, "n_in")
        n_out = _counter(m, o.valid & o.ready, "n_out")
        with m.If(s.valid):
            m.d.comb += Assume(s.payload.data[:SEQ] == n_in)
        held = Signal(SEQ, name="held")
        m.d.comb += held.eq(n_in - n_out)
        m.d.comb += [
            Assert(held <= self.max_held, "more beats held than the skid buffer has room for"),
            Assert(o.valid == (held != 0), "m_axis_tvalid does not match the beats held"),
            Assert(s.ready == (held < self.max_held), "s_axis_tready does not match the room left"),
        ]
        with m.If(o.valid):
            m.d.comb += Assert(o.payload.data[:SEQ] == n_out, "a beat lost, repeated or out of order")
        assert_stream_rules(m, o, "m_axis")
        if self.cover:
            m.d.comb += Cover(~s.ready & o.ready)
        return m


class MuxWholePackets(Elaboratable):
    def __init__(self, inputs=2, policy=1, data_width=64, cover=False):
        from opengse.rtl.lib.packet_mux import PacketMux

        self.dut = PacketMux(inputs=inputs, data_width=data_width, policy=policy)
        self.n, self.cover = inputs, cover

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        o = dut.m_axis
        m.d.comb += Assume(~ResetSignal())
        src = o.payload.data[SEQ : SEQ + 4]  # the input a beat came from
        in_pkt = Signal(name="out_in_pkt")  # an output packet has started
        cur = Signal(4, name="out_src")
        fire_o = o.valid & o.ready
        with m.If(fire_o):
            m.d.sync += [in_pkt.eq(~o.payload.last), cur.eq(src)]
        with m.If(o.valid & in_pkt):
            m.d.comb += Assert(src == cur, "a packet interleaved with another input's")
        with m.If(o.valid):
            m.d.comb += Assert(src < self.n, "a beat from no input")
            m.d.comb += Assert(o.payload.data[SEQ + 4] == o.payload.last, "last moved off its beat")
        for i, s in enumerate(dut.s_axis):
            assume_stream_rules(m, s, f"s_axis_{i}")
            n_in = _counter(m, s.valid & s.ready, f"n_in_{i}")
            n_out = _counter(m, fire_o & (src == i), f"n_out_{i}")
            pkts = Signal(32, name=f"pkts_{i}")
            with m.If(fire_o & (src == i) & o.payload.last):
                m.d.sync += pkts.eq(pkts + 1)
            with m.If(s.valid):
                m.d.comb += Assume(s.payload.data[:SEQ] == n_in)
                m.d.comb += Assume(s.payload.data[SEQ : SEQ + 4] == i)
                m.d.comb += Assume(s.payload.data[SEQ + 4] == s.payload.last)
            with m.If(o.valid & (src == i)):
                m.d.comb += Assert(
                    o.payload.data[:SEQ] == n_out, f"input {i}: a beat lost, repeated or reordered"
                )
            # stat_packets counts a packet as its last beat enters the output register
            pending = o.valid & (src == i) & o.payload.last
            m.d.comb += Assert(dut.stat_packets[i] == pkts + pending, f"stat_packets[{i}] wrong")
            m.d.comb += Assert((n_in - n_out)[:SEQ] <= 1, f"input {i}: more than one beat inside")
        assert_stream_rules(m, o, "m_axis")
        if self.cover:
            m.d.comb += Cover(fire_o & (src == self.n - 1) & o.payload.last & (dut.stat_packets[0] != 0))
        return m


class DemuxInOrder(Elaboratable):
    def __init__(self, outputs=3, data_width=64, cover=False):
        from opengse.rtl.lib.packet_demux import PacketDemux

        self.dut = PacketDemux(outputs=outputs, data_width=data_width)
        self.n, self.cover = outputs, cover

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        s, sel = dut.s_axis, dut.s_sel
        m.d.comb += Assume(~ResetSignal())
        assume_stream_rules(m, s, "s_axis")
        assume_stream_rules(m, sel, "s_sel")
        fire_i = s.valid & s.ready
        n_in = _counter(m, fire_i, "n_in")
        first = Signal(init=1, name="in_first")
        dest = Signal(4, name="in_dest")
        with m.If(fire_i):
            m.d.sync += first.eq(s.payload.last)
        with m.If(fire_i & first):
            m.d.sync += dest.eq(sel.payload.index)
        with m.If(sel.valid):
            m.d.comb += Assume(sel.payload.index < self.n)  # every packet routed
        with m.If(s.valid):
            m.d.comb += Assume(s.payload.data[:SEQ] == n_in)
            m.d.comb += Assume(s.payload.data[SEQ + 4] == s.payload.last)
            with m.If(first):
                m.d.comb += Assume(sel.valid)
                m.d.comb += Assume(s.payload.data[SEQ : SEQ + 4] == sel.payload.index)
            with m.Else():
                m.d.comb += Assume(s.payload.data[SEQ : SEQ + 4] == dest)
        fires = [o.valid & o.ready for o in dut.m_axis]
        n_out = _counter(m, sum(fires) != 0, "n_out")
        m.d.comb += Assert(sum(o.valid for o in dut.m_axis) <= 1, "two outputs valid at once")
        m.d.comb += Assert((n_in - n_out)[:SEQ] <= 1, "more than one beat inside")
        for k, o in enumerate(dut.m_axis):
            with m.If(o.valid):
                m.d.comb += [
                    Assert(o.payload.data[SEQ : SEQ + 4] == k, f"m_axis_{k}: a beat of another output"),
                    Assert(o.payload.data[:SEQ] == n_out, f"m_axis_{k}: a beat lost, repeated or reordered"),
                    Assert(o.payload.data[SEQ + 4] == o.payload.last, f"m_axis_{k}: last moved off its beat"),
                ]
            assert_stream_rules(m, o, f"m_axis_{k}")
        if self.cover:
            m.d.comb += Cover(fires[self.n - 1] & o.payload.last & (n_out == 5))
        return m


class OutputRules(Elaboratable):
    """Any block: its stream inputs follow the rule (and packet streams carry contiguous
    ``tkeep``), everything else is free; every output stream is asserted to follow it."""

    def __init__(self, factory, cover=False, outputs=None, stable=()):
        self.dut = factory()
        self.cover, self.outputs, self.stable = cover, outputs, stable

    def elaborate(self, platform):
        from amaranth.lib import stream, wiring

        m = Module()
        m.submodules.dut = dut = self.dut
        m.d.comb += Assume(~ResetSignal())
        started = Signal(name="started")
        m.d.sync += started.eq(1)
        for name in self.stable:  # configuration: set before traffic, then held
            sig = Value.cast(getattr(dut, name))
            prev = Signal(len(sig), name=f"{name}_prev")
            m.d.sync += prev.eq(sig)
            with m.If(started):
                m.d.comb += Assume(sig == prev)
        outs = []
        for name, member in dut.signature.members.items():
            if not (member.is_signature and isinstance(member.signature, stream.Signature)):
                continue
            port = getattr(dut, name)
            if member.flow == wiring.In:
                assume_stream_rules(m, port, name)
                if "keep" in dict(member.signature.members["payload"].shape):
                    assume_packet_keep(m, port)
            elif self.outputs is None or name in self.outputs:
                assert_stream_rules(m, port, name)
                outs.append(port)
        if self.cover:
            for port in outs:
                m.d.comb += Cover(port.valid & ~port.ready)
        return m


def _build(make):
    def build(cover=False):
        top = make(cover)
        return top, inputs_of(top.dut)

    return build


def _container_framing():
    from opengse.rtl.dgsq.container_framing import ContainerFraming

    return ContainerFraming(queue_bits=2, credit_bits=4, depth=2)


def _grant_framing():
    from opengse.rtl.dgsq.grant_framing import GrantFraming

    return GrantFraming(slot_bits=2)


_RULE = "once valid, valid and payload held until ready"
_SOLVER = {"engine": "smtbmc yices"}

SKID = register(
    Property(
        name="skid_buffer_in_order",
        block="skid_buffer",
        asserts="no beat lost, repeated or reordered; at most 2 beats held, tready low exactly when 2 are; "
        f"m_axis {_RULE} (64-bit)",
        assumptions="rst low after reset; s_axis follows the valid/ready rule and each beat's data "
        "carries the count of beats taken before it (mod 16); m_axis_tready, tkeep, tuser free",
        mode="bmc",
        depth=10,
        build=_build(lambda cover: SkidInOrder(cover=cover)),
        options=_SOLVER,
        bounded_why="k-induction does not close (tried k = 4): the skid register is not visible at the "
        "ports, "
        "and a stalled output keeps an unreachable skid value for any k; depth 10 passes every "
        "occupancy transition (0-1-2-1-0) several times",
    )
)
register_reach(SKID, "the skid register full while the output moves")

MUX_RR = register(
    Property(
        name="packet_mux_whole_packets",
        block="packet_mux",
        asserts="per input, beats leave in order, none lost or repeated; a packet leaves whole from one "
        f"input, never interleaved; last kept; stat_packets exact; m_axis {_RULE} "
        "(2 inputs, round-robin, 64-bit)",
        assumptions="rst low after reset; inputs follow the valid/ready rule; each beat's data carries its "
        "input, its last and the count of beats taken before it there (mod 16); m_axis_tready free",
        mode="bmc",
        depth=10,
        build=_build(lambda cover: MuxWholePackets(inputs=2, policy=1, cover=cover)),
        options=_SOLVER,
        bounded_why="k-induction does not close (tried k = 4): "
        "the in-packet state of the mux is not visible at "
        "the ports, and idle inputs keep an unreachable pairing with the wrapper state for any k; "
        "depth 10 holds several packets of each input",
    )
)
register_reach(MUX_RR, "a packet of input 1 leaves after one of input 0", depth=8)

MUX_PRI = register(
    Property(
        name="packet_mux_whole_packets_priority",
        block="packet_mux",
        asserts="as packet_mux_whole_packets, 3 inputs, strict priority (64-bit)",
        assumptions=MUX_RR.assumptions,
        mode="bmc",
        depth=10,
        build=_build(lambda cover: MuxWholePackets(inputs=3, policy=0, cover=cover)),
        options=_SOLVER,
        fast=False,
        bounded_why=MUX_RR.bounded_why,
    )
)

DEMUX = register(
    Property(
        name="packet_demux_in_order",
        block="packet_demux",
        asserts="every beat leaves on the output its packet's select names, in input order, none lost or "
        f"repeated, last kept; at most one output valid; every m_axis_<k> {_RULE} (3 outputs, 64-bit)",
        assumptions="rst low after reset; s_axis and s_sel follow the valid/ready rule; a select (index < 3: "
        "every packet routed) is valid with each first beat; each beat's data carries its select, its "
        "last and the count of beats before it (mod 16); every m_axis_<k>_tready free",
        mode="bmc",
        depth=10,
        build=_build(lambda cover: DemuxInOrder(outputs=3, cover=cover)),
        options=_SOLVER,
        bounded_why="k-induction does not close (tried k = 4): "
        "the first-beat state of the demux is not visible "
        "at the ports; depth 10 holds several packets to each output",
    )
)
register_reach(DEMUX, "the sixth beat leaves on output 2 as a packet's last", depth=10)

CF = register(
    Property(
        name="container_framing_stream_rules",
        block="container_framing",
        asserts=f"m_deq and m_done: {_RULE} (queue_bits 2, credit_bits 4, depth 2); unbounded "
        "(not m_meta: with free inputs its valid can drop while stalled; in context see "
        "container_framing_meta_in_context)",
        assumptions="rst low after reset; s_rel, s_done and s_desc follow the valid/ready rule; "
        "their contents, every ready and every other input free",
        mode="prove",
        depth=4,
        build=_build(lambda cover: OutputRules(_container_framing, cover=cover, outputs=("m_deq", "m_done"))),
        options=_SOLVER,
    )
)

GF = register(
    Property(
        name="grant_framing_stream_rules",
        block="grant_framing",
        asserts=f"m_ctl: {_RULE} (slot_bits 2); unbounded",
        assumptions="rst low after reset; s_grant follows the valid/ready rule; node_id and port held "
        "(configuration); the grants' content and m_ctl_ready free",
        mode="prove",
        depth=4,
        build=_build(lambda cover: OutputRules(_grant_framing, cover=cover, stable=("node_id", "port"))),
        options=_SOLVER,
    )
)
