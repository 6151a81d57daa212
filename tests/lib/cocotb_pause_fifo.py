"""cocotb tests of gse_pause_fifo (rtl/lib/pause_fifo.py) behind a modelled paused link.

The bench is the link and both of its ends, in plain Python, one clock at a time:

* a sender with a queue of frames that starts no new frame while the pause it sees is 1
  (the PauseGate rule), the pause it sees being the FIFO's ``pause`` ``delay`` clocks
  ago, and whose beats reach ``s_axis`` ``delay`` clocks after it sent them (the
  ``FabricLink``: never back-pressured);
* a consumer on ``m_axis`` with random back-pressure.

Reference (plain Python): every frame leaves once, in order, byte for byte with its
``tuser``; with the headroom of :func:`pause_thresholds` nothing overflows. Per clock:
``pause`` follows the XOFF/XON rule from the previous clock's ``level``; ``level`` equals
the beats taken minus the beats that left, less the 0..2 beats of the output slice;
``stat_pause_cycles`` and ``stat_peak_level`` agree with what was seen. The overflow
test drives more than the store holds into a stalled output and checks which frames a
model of the store's room rule keeps, cuts or drops.

Parameters: the block's (``OPENGSE_PARAMS``), the link delay and the longest frame
(``PAUSE_DELAY``, ``PAUSE_MAX_FRAME``).
"""

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

from opengse.sim.cocotb_util import reset_dut
from opengse.sim.runner import test_params

DELAY = int(os.environ.get("PAUSE_DELAY", "100"))
MAX_FRAME = int(os.environ.get("PAUSE_MAX_FRAME", "9018"))


def beats_of(body, bpb):
    return [body[i : i + bpb] for i in range(0, len(body), bpb)]


class LinkBench:
    """The paused link around the DUT, stepped at falling edges (inputs settle before the
    next rising edge samples them; outputs are read after the previous one)."""

    def __init__(
        self,
        dut,
        seed,
        *,
        delay=DELAY,
        idle=0.05,
        backpressure=0.5,
        obey_pause=True,
        bad=0.1,
        stall_phases=False,
    ):
        self.dut = dut
        self.rng = random.Random(seed)
        p = test_params()
        self.bpb = p["data_width"] // 8
        self.depth = 2
        while self.depth * self.bpb < p["depth_bytes"]:
            self.depth *= 2
        self.xoff = -(-p["xoff_bytes"] // self.bpb)
        self.xon = -(-p["xon_bytes"] // self.bpb)
        self.delay, self.idle, self.bp, self.obey, self.bad = delay, idle, backpressure, obey_pause, bad
        self.stall_phases, self.phase_stalled, self.phase_end = stall_phases, False, 0
        self.sent = []  # (body, user) in send order
        self.queue = deque()  # frames not yet started by the sender: (beats, user)
        self.cur = None  # [beats, index, user] of the frame being sent
        self.wire = deque([None] * delay)  # beats on the link toward s_axis
        self.pause_wire = deque([0] * delay)  # pause on its way back to the sender
        self.rx = []  # (body, user) as received
        self.rx_cur = bytearray()
        self.clock = 0
        self.beats_in = self.beats_out = 0
        self.pause_seen = 0  # clocks with pause = 1
        self.peak = 0
        self.prev = (0, 0)  # level and pause of the previous clock
        self.errors = []
        self.out_clocks = []  # clocks in which a beat left
        self.in_clocks = []  # clocks in which a beat was offered to s_axis
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    async def start(self):
        d = self.dut
        d.s_axis_tvalid.value = 0
        d.s_axis_tdata.value = 0
        d.s_axis_tkeep.value = 0
        d.s_axis_tlast.value = 0
        d.s_axis_tuser.value = 0
        d.m_axis_tready.value = 0
        await reset_dut(d)

    def frame(self, length, user=None):
        body = self.rng.randbytes(length)
        user = int(self.rng.random() < self.bad) if user is None else user
        self.sent.append((body, user))
        self.queue.append((beats_of(body, self.bpb), user))

    def _sender(self, paused):
        """The beat the sender puts on the wire this clock (None: idle)."""
        if self.cur is None:
            if not self.queue or (paused and self.obey) or self.rng.random() < self.idle:
                return None
            beats, user = self.queue.popleft()
            self.cur = [beats, 0, user]
        elif self.rng.random() < self.idle:
            return None
        beats, i, user = self.cur
        last = i == len(beats) - 1
        self.cur[1] += 1
        if last:
            self.cur = None
        return beats[i], last, user if last else 0

    async def run(self, clocks_limit, until_drained=True, stall_until=None):
        """Step until everything sent has left (``clocks_limit`` clocks: fail), or with
        ``until_drained`` False up to clock ``clocks_limit``. ``stall_until()`` false:
        the consumer stalls."""
        d = self.dut
        while True:
            await FallingEdge(d.clk)
            self.clock += 1
            level = int(d.level.value)
            pause = int(d.pause.value)
            overflow = int(d.stat_drop_overflow.value)
            # -- the XOFF/XON rule, from the previous clock's level
            prev_level, prev_pause = self.prev
            want = 1 if prev_level > self.xoff else 0 if prev_level < self.xon else prev_pause
            if pause != want:
                self.errors.append(
                    f"clock {self.clock}: pause {pause} after level {prev_level}, expected {want}"
                )
            if level > self.depth:
                self.errors.append(f"clock {self.clock}: level {level} > depth {self.depth}")
            if overflow == 0:
                inside = self.beats_in - self.beats_out - level
                if not 0 <= inside <= 2:
                    self.errors.append(
                        f"clock {self.clock}: level {level} but {self.beats_in} in, {self.beats_out} out"
                    )
            self.pause_seen += pause
            self.peak = max(self.peak, level)
            self.prev = (level, pause)
            # -- consumer: this clock's tready; a valid beat moves at the next edge
            stalled = stall_until is not None and not stall_until()
            if self.stall_phases:  # long stretches of a stalled output
                if self.clock >= self.phase_end:
                    self.phase_stalled = not self.phase_stalled
                    self.phase_end = self.clock + self.rng.randrange(100, 1500)
                stalled = stalled or self.phase_stalled
            ready = 0 if stalled else int(self.rng.random() >= self.bp)
            d.m_axis_tready.value = ready
            if ready and int(d.m_axis_tvalid.value):
                self._take()
            # -- link: pause back to the sender, beats forward to s_axis
            self.pause_wire.append(pause)
            paused = self.pause_wire.popleft()
            self.wire.append(self._sender(paused))
            beat = self.wire.popleft()
            if beat is None:
                d.s_axis_tvalid.value = 0
            else:
                chunk, last, user = beat
                d.s_axis_tvalid.value = 1
                d.s_axis_tdata.value = int.from_bytes(chunk, "little")
                d.s_axis_tkeep.value = (1 << len(chunk)) - 1
                d.s_axis_tlast.value = int(last)
                d.s_axis_tuser.value = user
                self.beats_in += 1
                self.in_clocks.append(self.clock)
            if until_drained and len(self.rx) == len(self.sent) and not self._busy():
                break
            if self.clock >= clocks_limit and not until_drained:
                break
            if self.clock >= clocks_limit:
                raise AssertionError(
                    f"waited {clocks_limit} clocks for {len(self.sent)} frames; {len(self.rx)} arrived, "
                    f"{overflow} overflowed, level {level}, pause {pause}"
                )

    def _busy(self):
        return self.queue or self.cur is not None or any(b is not None for b in self.wire)

    def _take(self):
        d = self.dut
        keep = int(d.m_axis_tkeep.value)
        n = bin(keep).count("1")
        if keep != (1 << n) - 1:
            self.errors.append(f"clock {self.clock}: tkeep {keep:#x} not contiguous")
        self.rx_cur += int(d.m_axis_tdata.value).to_bytes(self.bpb, "little")[:n]
        self.beats_out += 1
        self.out_clocks.append(self.clock)
        if int(d.m_axis_tlast.value):
            self.rx.append((bytes(self.rx_cur), int(d.m_axis_tuser.value)))
            self.rx_cur = bytearray()

    def check_counters(self):
        d = self.dut
        assert not self.errors, "\n".join(self.errors[:10])
        assert int(d.stat_pause_cycles.value) == self.pause_seen, (
            f"stat_pause_cycles {int(d.stat_pause_cycles.value)} != {self.pause_seen} clocks seen"
        )
        assert int(d.stat_peak_level.value) == self.peak, (
            f"stat_peak_level {int(d.stat_peak_level.value)} != {self.peak} seen"
        )


def check_in_order(tb):
    """Every sent frame arrived once, in order, byte for byte, with its tuser."""
    assert len(tb.rx) == len(tb.sent), f"{len(tb.rx)} frames arrived of {len(tb.sent)}"
    for k, ((body, user), (got, got_user)) in enumerate(zip(tb.sent, tb.rx)):
        assert got == body, f"frame {k} ({len(body)} B) arrived as {len(got)} B, differing"
        assert got_user == user, f"frame {k}: tuser {got_user}, sent {user}"


@cocotb.test()
async def test_lossless_behind_pause(dut):
    """Frames up to the longest, random idle on the link, 50 % back-pressure at the
    output and stretches of 100..1500 clocks with the output stalled: the sender is
    paused over and over, the store rises past XOFF deep into its headroom (more than
    one link delay), and not one beat overflows."""
    tb = LinkBench(dut, 1, stall_phases=True)
    await tb.start()
    for _ in range(40):
        tb.frame(tb.rng.choice([60, 61, MAX_FRAME, tb.rng.randrange(60, MAX_FRAME + 1)]))
    await tb.run(2_000_000)
    check_in_order(tb)
    tb.check_counters()
    assert int(dut.stat_drop_overflow.value) == 0, f"{int(dut.stat_drop_overflow.value)} frames overflowed"
    assert tb.pause_seen > 0, "pause never rose: the test did not exercise the headroom"
    assert tb.peak > tb.xoff + tb.delay, f"peak level {tb.peak} never a delay above XOFF {tb.xoff}"
    dut._log.info(
        "peak %d of %d beats (XOFF %d), paused %d of %d clocks",
        tb.peak,
        tb.depth,
        tb.xoff,
        tb.pause_seen,
        tb.clock,
    )


@cocotb.test()
async def test_full_rate(dut):
    """No idle, no back-pressure: one beat per clock out from first to last, each beat
    3 clocks after it arrived, and pause never rises."""
    tb = LinkBench(dut, 2, idle=0.0, backpressure=0.0)
    await tb.start()
    for _ in range(30):
        tb.frame(tb.rng.choice([60, 64, 65, 1500, tb.rng.randrange(60, 600)]), user=0)
    await tb.run(200_000)
    check_in_order(tb)
    tb.check_counters()
    outs, ins = tb.out_clocks, tb.in_clocks
    assert outs[-1] - outs[0] + 1 == len(outs), (
        f"{len(outs)} beats over {outs[-1] - outs[0] + 1} clocks: bubbles"
    )
    assert [o - i for i, o in zip(ins, outs)] == [3] * len(ins), "latency is not 3 clocks for every beat"
    assert tb.pause_seen == 0, "pause rose at full rate"


class StoreModel:
    """The store's room rule (docstring of PauseFIFO): a non-last beat needs 2 free
    words, a last beat 1; a frame that runs out of room inside is cut (its beat in the
    last free word becomes a bad last beat), one that has no room for its first beat is
    dropped whole. Reads: none (output stalled) but the 2 words of the output slice."""

    def __init__(self, depth):
        self.depth, self.written = depth, 0

    def level(self):
        return self.written - min(self.written, 2)

    def frame(self, beats):
        """``("kept"|"cut"|"dropped", words written)``."""
        for i in range(len(beats)):
            last = i == len(beats) - 1
            room = self.depth - self.level()
            if room >= (1 if last else 2):
                self.written += 1
            elif i > 0:
                self.written += 1
                return "cut", i + 1
            else:
                return "dropped", 0
        return "kept", len(beats)


@cocotb.test()
async def test_overflow_drops_whole_and_counts(dut):
    """A sender that ignores pause into a stalled output: the frames that fit arrive
    intact, the one that runs out of room arrives cut and flagged bad, the rest are
    dropped; each one counted once in stat_drop_overflow; then the store works on."""
    tb = LinkBench(dut, 3, delay=1, idle=0.0, obey_pause=False, bad=0.0)
    await tb.start()
    model = StoreModel(tb.depth)
    lengths = [4 * tb.bpb] + [tb.rng.randrange(60, tb.depth * tb.bpb // 3) for _ in range(12)]
    released = []

    # send one frame at a time into the stalled output, with idle clocks between
    expect = []
    for n in lengths:
        tb.frame(n, user=0)
        body = tb.sent[-1][0]
        fate, words = model.frame(beats_of(body, tb.bpb))
        expect.append((fate, body[: words * tb.bpb], int(fate == "cut")))
        await tb.run(
            tb.clock + len(beats_of(body, tb.bpb)) + 12, until_drained=False, stall_until=lambda: released
        )
    drops = sum(1 for fate, _, _ in expect if fate != "kept")
    assert drops >= 2 and any(f == "cut" for f, _, _ in expect), f"the lengths overflowed only {drops} frames"
    assert int(dut.stat_drop_overflow.value) == drops, (
        f"stat_drop_overflow {int(dut.stat_drop_overflow.value)}, the model drops or cuts {drops}"
    )
    assert int(dut.level.value) == model.level(), f"level {int(dut.level.value)}, model {model.level()}"
    # release the output: what the model kept or cut drains; then a new frame passes
    released.append(True)

    async def drain(count):
        start = tb.clock
        while len(tb.rx) < count:
            await tb.run(tb.clock + 1, until_drained=False, stall_until=lambda: released)
            assert tb.clock - start < 100_000, (
                f"waited 100000 clocks for {count} frames, {len(tb.rx)} arrived"
            )

    dut._log.info("model: %s", [(f, len(b)) for f, b, _ in expect])
    await drain(sum(1 for fate, _, _ in expect if fate != "dropped"))
    tb.frame(200, user=0)
    expect.append(("kept", tb.sent[-1][0], 0))
    want = [(body, user) for fate, body, user in expect if fate != "dropped"]
    await drain(len(want))
    await tb.run(tb.clock + 50, until_drained=False, stall_until=lambda: released)
    assert len(tb.rx) == len(want), f"{len(tb.rx)} frames arrived, the model keeps or cuts {len(want)}"
    for k, ((body, user), (got, got_user)) in enumerate(zip(want, tb.rx)):
        assert got == body and got_user == user, (
            f"frame {k}: {len(got)} B tuser {got_user}, the model says {len(body)} B tuser {user}"
        )
    assert not [e for e in tb.errors if "pause" in e], "\n".join(tb.errors[:10])
