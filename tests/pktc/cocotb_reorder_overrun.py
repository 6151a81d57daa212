"""cocotb bench for the reorder buffer's overrun skip (``skip_distance`` D > 0).

A FIRST frame stored D or more ahead of the next ``seq`` due proves that the head is
lost when the head is missing or partial (the sources keep at most D containers of
one source in flight): the head is skipped at once, counted in ``lost`` and
``lost_overrun``, instead of waiting out ``timeout`` while later containers fall out
of the window. Each directed case is played through
``opengse.sim.pktc_model.ReorderWindowModel`` in the same frame order; the delivered
containers (byte-exact, ``ReorderChecker``) and every counter must match it. The
timing checks bound how soon a proven skip happens (far below ``timeout``) and that
a head short of the distance, or a closed one, is not skipped early.

Every wait is bounded (``ReorderTB.wait_delivered`` / cycle limits)."""

import cocotb
from cocotb.triggers import RisingEdge

from cocotb_reorder import ReorderTB
from opengse.sim.pktc_model import FIRST, ReorderWindowModel, frame_fields

# a proven skip: the proof reaches the head scheduler 3 clocks after header byte 31,
# then one token turn (sources clocks) and the frame's own decision pipeline
PROVEN_SKIP_CLOCKS = 400


class Played:
    """One source played through the DUT and the model, frame by frame."""

    def __init__(self, tb, src):
        self.tb, self.src = tb, src
        p = tb.p
        self.model = ReorderWindowModel(p["window"], p["skip_distance"])
        self.conts = {}

    def cont(self, seq, nframes=3):
        if seq not in self.conts:
            self.conts[seq] = self.tb.container(self.src, seq, nframes=nframes)
        return self.conts[seq]

    def send(self, frames):
        for fr in frames:
            f = frame_fields(fr)
            self.model.frame(f["seq"], bool(f["flags"] & FIRST), bool(f["flags"] & 2))
            self.tb.send(fr)

    def send_cont(self, seq):
        self.send(self.cont(seq))

    async def idle(self, cycles):
        await self.tb.wait_idle(cycles)

    def delivered(self):
        return self.tb.checker.delivered(self.src)

    async def finish(self, timeouts=0):
        """Expectations from the model (containers, counters), then the bench's check."""
        for _ in range(timeouts):
            self.model.timeout()
        for q in self.model.delivered:
            self.tb.checker.expect(self.src, q, self.conts[q])
        st = self.model.stats
        assert st["frames_in"] == self.tb.expect_stats["frames_in"]
        for k in ("lost", "drop_dup", "drop_window", "drop_orphan"):
            self.tb.expect_stats[k] += st[k]
        await self.tb.finish()
        got = int(self.tb.dut.stat_lost_overrun.value)
        assert got == st["lost_overrun"], f"lost_overrun {got}, model {st['lost_overrun']}"


async def _tb(dut, seed, p_in=0.0, p_out=0.0):
    tb = ReorderTB(dut, seed)
    assert tb.p["skip_distance"] > 0, "this bench needs a build with skip_distance > 0"
    tb.set_pauses(p_in, p_out)
    await tb.reset()
    return tb


async def _clocks_until(tb, cond, limit, what):
    for n in range(limit):
        if cond():
            return n
        await RisingEdge(tb.dut.clk)
    raise AssertionError(f"{what}: not within {limit} clocks; stats {await tb.stats()}")


@cocotb.test()
async def test_overrun_skips_missing_head(dut):
    """Head 0 missing, 1..D-1 stored: nothing released (short of the distance); the
    FIRST of container D skips head 0 at once; the late head is a duplicate."""
    tb = await _tb(dut, 11)
    D = tb.p["skip_distance"]
    s = Played(tb, 1)
    for q in range(1, D):
        s.send_cont(q)
    await s.idle(300)
    assert s.delivered() == 0, "head skipped short of skip_distance"
    s.send_cont(D)
    n = await _clocks_until(
        tb, lambda: s.delivered() >= D, PROVEN_SKIP_CLOCKS, f"containers 1..{D} after the proof"
    )
    assert n < tb.p["timeout"] // 4, n
    s.send_cont(0)  # too late
    await s.finish()
    assert s.model.stats["lost_overrun"] == 1 and s.model.delivered == list(range(1, D + 1))


@cocotb.test()
async def test_overrun_partial_head_and_run(dut):
    """Head 0 cut after its FIRST frame, head 1 missing, 2..D stored: container D skips
    head 0 only (no chain: head 1 is short of the distance from D); container D+1 then
    skips head 1; the cut head's tail is counted as duplicates."""
    tb = await _tb(dut, 12, p_in=0.2, p_out=0.3)
    D = tb.p["skip_distance"]
    s = Played(tb, 2)
    s.send(s.cont(0)[:1])
    for q in range(2, D + 1):
        s.send_cont(q)
    await s.idle(300)
    assert s.delivered() == 0, "released past missing head 1"
    assert int(tb.dut.stat_lost_overrun.value) == 1
    s.send_cont(D + 1)
    await _clocks_until(tb, lambda: s.delivered() >= D, PROVEN_SKIP_CLOCKS + 600, f"containers 2..{D + 1}")
    s.send(s.cont(0)[1:])
    await s.finish()
    assert s.model.stats["lost_overrun"] == 2


@cocotb.test()
async def test_no_early_skip_of_late_or_closed_head(dut):
    """Skew, not loss: 1..D-1 wait for a late head 0 (held 1000 clocks, under the
    timeout) and all are delivered; then, with the output held back, a late head's
    LAST and a FIRST D ahead of it back to back: the head is closed, not skipped."""
    tb = await _tb(dut, 13)
    D = tb.p["skip_distance"]
    s = Played(tb, 3)
    for q in range(1, D):
        s.send_cont(q)
    await s.idle(1000)
    assert s.delivered() == 0
    s.send_cont(0)
    await tb.wait_delivered(3, D)
    base = D
    tb.set_pauses(0.0, 0.8)
    for q in range(base + 1, base + D):
        s.send_cont(q)
    await s.idle(50)
    s.send(s.cont(base) + s.cont(base + D))  # no idle clock between the two
    await tb.wait_delivered(3, 2 * D + 1)
    await s.finish()
    assert s.model.stats["lost"] == 0


@cocotb.test()
async def test_timer_and_jump_still_work(dut):
    """Short of the distance a lost head still goes by the timer (counted lost, not
    overrun); frames far out of window prove nothing and the window jumps after the
    timeout, as with skip_distance 0."""
    tb = await _tb(dut, 14, p_in=0.2, p_out=0.2)
    s = Played(tb, 0)
    for q in range(1, 4):
        s.send_cont(q)
    await tb.wait_delivered(0, 3, limit=tb.p["timeout"] + 500)
    s.model.timeout()  # head 0, by the timer
    assert int(tb.dut.stat_lost_overrun.value) == 0
    # far ahead, nothing stored: out of window, then the window jumps (timer) to 203
    for q in range(200, 204):
        s.send_cont(q)  # the model counts them out of window too
    await tb.wait_idle(tb.p["timeout"] + 50)
    # the jump skips 4..202 (199), then 203 goes by the timer once 204.. are stored;
    # the model starts again at 204
    tb.expect_stats["lost"] += 199 + 1
    s.model.exp = 204
    for q in range(204, 204 + 4):
        s.send_cont(q)
    await s.finish()
