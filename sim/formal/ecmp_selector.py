"""ECMP selector: frames leave whole, in order, only on uplinks that were healthy; a
flow keeps its uplink while the healthy set stays.

Both wrappers use rtl/pktc/ecmp_selector.py at 512 bits with 2 uplinks, so a frame's
whole key (bytes 0-55) is in its first beat and one-beat frames come back to back.
Beats describe themselves in bytes the hash never reads (56-63): byte 60 carries the
count of beats taken before it (mod 16), byte 61 its ``last``.

* ``ecmp_selector_frames_whole`` (:class:`EcmpRules`): ``s_axis`` follows the
  valid/ready rule, at least one uplink is healthy, ``healthy``, ``seed``, the data and
  every ``m_axis_<u>_tready`` are otherwise free. Asserted: beats leave in input order
  (none lost or repeated, across the uplinks: one frame at a time), ``last`` kept; a
  frame leaves whole on one uplink; that uplink was healthy when the frame's key was
  read (its first beat here); at most one uplink valid; every output keeps the
  valid/ready rule; ``stat_frames`` of each uplink counts the frames that left there.
* ``ecmp_selector_flow_sticky`` (``sticky=True``): ``healthy`` and ``seed`` held and
  every frame of one flow (the bytes the key is built from, 0-55, equal in every frame;
  full first beats); asserted: every frame leaves on the uplink the first one took.

The beat FIFO, the choice FIFO and the 4-stage choice pipeline are not visible at the
ports: BMC to depth 9 (the cover check sees a second frame leave at step 7). Each step
holds the 16 x 578-bit beat FIFO: step 11 took minutes here, so both run with
``gse formal --all`` only.
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach
from .streams import ShadowQueue, assume_stream_rules
from .stream_blocks import assert_stream_rules

__all__ = ["EcmpRules", "PARAMS"]

PARAMS = dict(uplinks=2, data_width=512)
SEQ_BYTE, LAST_BYTE = 60, 61


class EcmpRules(Elaboratable):
    def __init__(self, cover=False, sticky=False, check_health=True):
        from opengse.rtl.pktc.ecmp_selector import ECMPSelector

        self.dut = ECMPSelector(**PARAMS)
        self.cover, self.sticky, self.check_health = cover, sticky, check_health

    def elaborate(self, platform):
        from opengse.rtl.pktc.ecmp_selector import USED

        m = Module()
        m.submodules.dut = dut = self.dut
        U = PARAMS["uplinks"]
        s = dut.s_axis
        d = s.payload.data
        m.d.comb += Assume(~ResetSignal())
        assume_stream_rules(m, s, "s_axis")
        take = s.valid & s.ready
        first_in = Signal(init=1, name="first_in")
        with m.If(take):
            m.d.sync += first_in.eq(s.payload.last)
        n_in = Signal(4, name="n_in")
        with m.If(take):
            m.d.sync += n_in.eq(n_in + 1)
        with m.If(s.valid):
            m.d.comb += [
                Assume(d.word_select(SEQ_BYTE, 8) == n_in),
                Assume(d.word_select(LAST_BYTE, 8) == s.payload.last),
                Assume(dut.healthy != 0),
            ]
        # the healthy set each frame's key met (its first beat, at 512 bits)
        masks = ShadowQueue(m, U, 20, name="mask")  # frames in flight: FIFO 16 + pipeline
        masks.push(m, take & first_in, dut.healthy)

        outs = dut.m_axis
        fires = [o.valid & o.ready for o in outs]
        any_fire = Signal(name="any_fire")
        m.d.comb += any_fire.eq(sum(fires) != 0)
        n_out = Signal(4, name="n_out")
        with m.If(any_fire):
            m.d.sync += n_out.eq(n_out + 1)
        first_out = Signal(init=1, name="first_out")
        cur = Signal(range(U), name="out_uplink")
        m.d.comb += Assert(sum(o.valid for o in outs) <= 1, "two uplinks valid at once")
        ends = Signal(name="frame_out")
        m.d.comb += ends.eq(sum(f & o.payload.last for f, o in zip(fires, outs)) != 0)
        masks.pop(m, ends, "a frame left that was never taken")
        first_uplink = Signal(range(U), name="first_uplink")
        seen_one = Signal(name="seen_one")
        for u, (o, f) in enumerate(zip(outs, fires)):
            od = o.payload.data
            with m.If(o.valid):
                m.d.comb += [
                    Assert(
                        od.word_select(SEQ_BYTE, 8) == n_out,
                        f"m_axis_{u}: a beat lost, repeated or reordered",
                    ),
                    Assert(od.word_select(LAST_BYTE, 8) == o.payload.last, f"m_axis_{u}: last moved"),
                ]
                with m.If(~first_out):
                    m.d.comb += Assert(cur == u, f"m_axis_{u}: a frame split across uplinks")
                with m.Else():
                    if self.check_health:
                        m.d.comb += Assert(masks.head[u], f"m_axis_{u}: a frame to an uplink that was down")
                    if self.sticky:
                        with m.If(seen_one):
                            m.d.comb += Assert(first_uplink == u, f"m_axis_{u}: the flow moved uplink")
            with m.If(f):
                m.d.sync += [first_out.eq(o.payload.last), cur.eq(u)]
                with m.If(first_out & ~seen_one):
                    m.d.sync += [seen_one.eq(1), first_uplink.eq(u)]
            assert_stream_rules(m, o, f"m_axis_{u}")
            frames = Signal(32, name=f"frames_{u}")
            with m.If(f & o.payload.last):
                m.d.sync += frames.eq(frames + 1)
            m.d.comb += Assert(dut.stat_frames[u] == frames, f"stat_frames[{u}] wrong")

        if self.sticky:
            started = Signal(name="started")
            m.d.sync += started.eq(1)
            prev_h = Signal(U, name="prev_healthy")
            prev_seed = Signal(32, name="prev_seed")
            m.d.sync += [prev_h.eq(dut.healthy), prev_seed.eq(dut.seed)]
            with m.If(started):
                m.d.comb += [Assume(dut.healthy == prev_h), Assume(dut.seed == prev_seed)]
            key = {o: Signal(8, name=f"key_{o}") for o in USED}
            have_key = Signal(name="have_key")
            with m.If(s.valid & first_in):
                m.d.comb += Assume(s.payload.keep == (1 << 64) - 1)
                with m.If(have_key):
                    for o, reg in key.items():
                        m.d.comb += Assume(d.word_select(o, 8) == reg)
            with m.If(take & first_in & ~have_key):
                m.d.sync += have_key.eq(1)
                m.d.sync += [reg.eq(d.word_select(o, 8)) for o, reg in key.items()]
        if self.cover:
            if self.sticky:
                m.d.comb += Cover(seen_one & first_out & any_fire)
            else:
                m.d.comb += Cover(fires[0] & first_out & (dut.stat_frames[1] != 0))
        return m


def _build(**kw):
    def build(cover=False):
        top = EcmpRules(cover=cover, **kw)
        return top, inputs_of(top.dut)

    return build


_SOLVER = {"engine": "smtbmc yices"}
_WHY = (
    "k-induction does not close: the beat FIFO, the choice FIFO and the choice pipeline are not "
    "visible at the ports; depth 9 lets frames through to a second uplink (the cover check reaches it "
    "at step 7); one 512-bit step more costs minutes"
)

WHOLE = register(
    Property(
        name="ecmp_selector_frames_whole",
        block="ecmp_selector",
        asserts="beats leave in input order, none lost or repeated, last kept; a frame whole on one uplink; "
        "that uplink healthy when the frame's key was read; at most one uplink valid; every m_axis_<u> "
        "keeps the valid/ready rule; stat_frames exact (512-bit, 2 uplinks)",
        assumptions="rst low after reset; s_axis follows the valid/ready rule; at least one uplink healthy; "
        "bytes 60-61 of each beat carry its count (mod 16) and last (bytes the hash never reads); "
        "healthy, seed, other data, keep and every tready free",
        mode="bmc",
        depth=9,
        build=_build(),
        options=_SOLVER,
        fast=False,
        bounded_why=_WHY,
    )
)
register_reach(WHOLE, "a frame leaves on uplink 0 after one left on uplink 1")

STICKY = register(
    Property(
        name="ecmp_selector_flow_sticky",
        block="ecmp_selector",
        asserts="every frame of one flow leaves on the uplink the first one took, while healthy and seed "
        "stay (and all of ecmp_selector_frames_whole)",
        assumptions=WHOLE.assumptions + "; healthy and seed held; bytes 0-55 (all the key is built from) "
        "equal in every frame, first beats full",
        mode="bmc",
        depth=9,
        build=_build(sticky=True),
        options=_SOLVER,
        fast=False,
        bounded_why=_WHY,
    )
)
register_reach(STICKY, "a second frame of the flow leaves")
