"""PacketMux: N AXI4-Stream packet inputs onto one output, whole packets at a time."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from .round_robin import next_in_turn
from .stream import AXIStreamSignature, check_data_width

__all__ = ["PacketMux", "PRIORITY", "ROUND_ROBIN", "EXPORTS"]

PRIORITY = 0  #: strict priority: the lowest-numbered input with a packet wins
ROUND_ROBIN = 1  #: round-robin: the first input with a packet after the last winner


class PacketMux(wiring.Component):
    """Packet multiplexer: N AXI4-Stream inputs to one, never splitting a packet.

    Parameters
    ----------
    inputs : int
        Number of inputs N (2..16).
    data_width, user_width : int
        Width of ``tdata`` (a power of two, 8..512) and ``tuser``.
    policy : int
        :data:`PRIORITY` (0): strict priority by input index, input 0 highest
        (control frames on input 0 go ahead of data); :data:`ROUND_ROBIN` (1): the
        inputs take turns, packet by packet, starting after the last winner.

    Interface
    ---------
    ``s_axis[0..N-1]`` : ``In(AXIStreamSignature(data_width, user_width))``
        Inputs (exported as ``s_axis_<i>_t*``). An input is ready only while it is
        the one being forwarded and the output register can take a beat.
    ``m_axis`` : ``Out(AXIStreamSignature(data_width, user_width))``
        Output: ``tvalid`` and the beat are registers; ``tready`` reaches the
        selected input's ``tready`` through one gate (put a
        :class:`~opengse.rtl.lib.skid_buffer.SkidBuffer` behind the mux to cut it).
    ``stat_packets[0..N-1]`` : ``Out(32)``
        Packets forwarded from each input (wrapping).

    Timing
    ------
    The choice is made between packets, in the clock in which the previous packet's
    last beat moves into the output register (or any clock while idle), from the
    inputs' ``tvalid`` of that clock: the chosen packet's first beat moves in the
    same clock. So: 1 beat per clock, and no idle clock between back-to-back packets
    of one input or of different inputs. Latency 1 clock. Once a packet has started,
    its input is followed to the last beat, however long it idles in between.
    A waiting input is served after at most N - 1 packets under round-robin; under
    strict priority a busy higher input can starve it (that is the policy).
    """

    def __init__(self, inputs=2, data_width=64, user_width=1, policy=PRIORITY):
        if not isinstance(inputs, int) or not 2 <= inputs <= 16:
            raise ValueError(f"inputs must be 2..16, not {inputs!r}")
        if policy not in (PRIORITY, ROUND_ROBIN):
            raise ValueError("policy: 0 strict priority, 1 round-robin")
        self.inputs, self.policy = inputs, policy
        self.data_width = check_data_width(data_width)
        sig = AXIStreamSignature(data_width, user_width)
        super().__init__(
            {"s_axis": In(sig).array(inputs), "m_axis": Out(sig), "stat_packets": Out(32).array(inputs)}
        )

    def elaborate(self, platform):
        m = Module()
        n = self.inputs
        sbits = max(1, (n - 1).bit_length())
        o = self.m_axis
        valids = Cat(s.valid for s in self.s_axis)

        in_pkt = Signal()  # inside a packet: follow `sel`
        # the input being forwarded (between packets: the last winner; after reset N-1,
        # so that round-robin starts at input 0)
        sel = Signal(sbits, init=n - 1)
        pick = Signal(sbits)  # the winner if a packet starts now
        pick_ok = Signal()
        m.d.comb += pick_ok.eq(valids.any())
        if self.policy == PRIORITY:
            for i in reversed(range(n)):
                with m.If(valids[i]):
                    m.d.comb += pick.eq(i)
        else:
            # first valid input after `sel`, cyclically
            rr_pick, _ = next_in_turn(m, valids, sel)
            m.d.comb += pick.eq(rr_pick)

        cur = Signal(sbits)
        m.d.comb += cur.eq(Mux(in_pkt, sel, pick))
        free = Signal()  # the output register can take a beat
        m.d.comb += free.eq(~o.valid | o.ready)
        active = Signal()  # a source is being (or about to be) forwarded
        m.d.comb += active.eq(in_pkt | pick_ok)

        for i, s in enumerate(self.s_axis):
            m.d.comb += s.ready.eq(free & active & (cur == i))
        beat = Signal.like(o.payload, name="beat")
        with m.Switch(cur):
            for i, s in enumerate(self.s_axis):
                with m.Case(i):
                    m.d.comb += beat.eq(s.payload)
        take = Signal()
        m.d.comb += take.eq(free & active & valids.bit_select(cur, 1))

        with m.If(free):
            m.d.sync += o.valid.eq(take)
        with m.If(take):
            m.d.sync += [o.payload.eq(beat), sel.eq(cur), in_pkt.eq(~beat.last)]
            with m.If(beat.last):
                for i in range(n):
                    with m.If(cur == i):
                        m.d.sync += self.stat_packets[i].eq(self.stat_packets[i] + 1)
        return m


EXPORTS = [
    BlockSpec(
        name="packet_mux",
        module="gse_packet_mux",
        factory=PacketMux,
        params={"inputs": 2, "data_width": 64, "user_width": 1, "policy": PRIORITY},
        description="N AXI4-Stream inputs to one, whole packets, strict priority (input 0 "
        "highest) or round-robin; 1 beat per clock, no bubble between packets",
    )
]
