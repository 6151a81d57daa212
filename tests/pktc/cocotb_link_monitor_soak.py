"""Link monitor soak (issue 18): ``OPENGSE_SOAK_N`` inputs (1e4 by default, 1e5 under
``-m slow``), most of them hostile, against :class:`opengse.sim.link_monitor_model.LinkMonitorModel`
compared every clock.

An input is one pulse of ``probe_rx``, ``rx_frame`` or ``tx_data`` on one link, one
change of a link's ``link_up``, or one reset. Every 2-8 intervals each link draws a
mode:

- good: one PROBE an interval (``probe_rx`` with ``rx_frame``, as the parser pulses
  them), data both ways (``rx_frame`` and ``tx_data``: the PROBE is skipped), data
  one way only, silence (the link must go down after K intervals);
- hostile: ``probe_rx`` alone (a PROBE the parser did not count as a frame), bursts
  of spurious PROBEs (runs of pulses every clock: PROBEs for links or nodes that do
  not exist still arrive on some port), pulses on a link whose ``link_up`` is low, a
  PROBE only every 1-3 intervals (health flapping), ``link_up`` flapping every few
  clocks, ``tx_data`` on a down link;

and each ``m_probe`` port draws a ``tready`` duty of 30-100 % with stalls of up to 3
intervals (a due PROBE then waits and later ones merge into it). Resets land at random
clocks (often mid-PROBE), ``src_node`` changes under reset.

Checked every clock: ``healthy`` and each ``m_probe`` port's ``tvalid``, and while
valid its ``tdata``/``tkeep``/``tlast``/``tuser`` against the PROBE the brief's byte
table gives for the model's ``seq`` and beat; every interval and before each reset,
all 20 counters exactly against the model (``stat_probes_rcvd`` = the pulses sent,
``stat_probes_sent`` = the whole frames the bench took off the port); the documented
bounds, independently of the model (``healthy`` never more than 1 clock after the
registered ``link_up`` fell, never more than (K + 1) intervals after the last frame
heard). A progress watchdog fails the run when a port with a PROBE due moves no beat
for 8 intervals. At the end every link is brought up and probed: all healthy within
(M + 1) intervals and each sends its PROBE every interval (nothing stuck), and a last
reset clears every counter and output (full return)."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

from opengse.sim.link_monitor_model import LinkMonitorModel, probe_frame
from opengse.sim.runner import test_params
from opengse.sim.soak import ProgressWatchdog, ReasonTally, soak_inputs

GOOD = ("probe", "data", "tx_only", "rx_only", "silent")
HOSTILE = ("probe_only", "burst", "down_pulses", "sparse", "flap", "tx_down")
COUNTERS = ("probes_sent", "probes_rcvd", "probes_missed", "probes_skipped", "down_events")


class Bench:
    def __init__(self, dut, rng):
        p = test_params()
        self.dut, self.rng = dut, rng
        self.L, self.T, self.K, self.M = p["links"], p["interval"], p["miss_limit"], p["rejoin"]
        self.B = p["data_width"] // 8
        self.model = LinkMonitorModel(
            self.L, self.T, self.K, self.M, p["data_width"], p.get("idle_only", True)
        )
        self.valid = [getattr(dut, f"m_probe_{i}_tvalid") for i in range(self.L)]
        self.ready = [getattr(dut, f"m_probe_{i}_tready") for i in range(self.L)]
        self.data = [getattr(dut, f"m_probe_{i}_tdata") for i in range(self.L)]
        self.keep = [getattr(dut, f"m_probe_{i}_tkeep") for i in range(self.L)]
        self.last = [getattr(dut, f"m_probe_{i}_tlast") for i in range(self.L)]
        self.user = [getattr(dut, f"m_probe_{i}_tuser") for i in range(self.L)]
        self.tally = ReasonTally()
        self.events = self.hostile = 0
        self.clock = 0  # clocks since the last reset
        self.resets = 0
        self.stalls = 0
        self.merged = 0  # due PROBEs merged into one waiting, over all resets
        self.src = 0
        self.up = (1 << self.L) - 1
        self.frames = [0] * self.L  # whole PROBEs taken since the last reset
        self.partial = [0] * self.L
        self.mode = ["probe"] * self.L
        self.mode_left = [0] * self.L
        self.plan = [set() for _ in range(self.L)]
        self.duty = [1.0] * self.L
        self.stall = [0] * self.L
        self.last_heard = [None] * self.L
        self.up_low_since = [None] * self.L  # the clock link_up was first seen low
        self.wd = ProgressWatchdog(dut.clk, limit=8 * self.T)
        for i in range(self.L):
            self.wd.watch(
                f"m_probe_{i}", self.valid[i], self.ready[i], "produced", lambda i=i: self.model.pending(i)
            )

    def count(self, label, k=1, hostile=False):
        self.tally.add(label, k)
        self.events += k
        if hostile:
            self.hostile += k

    # --- the plan of each link ---------------------------------------------------------
    def new_modes(self, k):
        """At the start of an interval (``k``: the clock in it, 0), draw new modes where due."""
        r, T = self.rng, self.T
        for i in range(self.L):
            if self.mode_left[i] <= 0:
                self.mode[i] = r.choice(GOOD) if r.random() < 0.4 else r.choice(HOSTILE)
                self.mode_left[i] = r.randint(2, 8)
                self.duty[i] = r.choice((1.0, 0.9, 0.7, 0.3))
            self.mode_left[i] -= 1
            if r.random() < 0.05:
                self.stall[i] = r.randint(T // 2, 3 * T)
                self.stalls += 1
            m = self.mode[i]
            if m in ("probe", "tx_only", "probe_only", "down_pulses"):
                self.plan[i] = {r.randrange(T)}
            elif m == "burst":
                start = r.randrange(T)
                self.plan[i] = {r.randrange(T) for _ in range(r.randint(0, 40))} | set(
                    range(start, min(T, start + r.randint(1, 20)))
                )
            elif m == "sparse":
                self.plan[i] = {r.randrange(T)} if r.random() < 0.4 else set()
            else:
                self.plan[i] = set()
            # link_up: low for a down link, flapping for "flap", else high
            want = 0 if m in ("down_pulses", "tx_down") else 1
            if m != "flap" and ((self.up >> i) & 1) != want:
                self.up ^= 1 << i
                self.count("link_up change", hostile=m in ("down_pulses", "tx_down"))

    def inputs(self, k):
        """This clock's ``probe_rx``, ``rx_frame``, ``tx_data``, with their tally."""
        r = self.rng
        prx = rxf = txd = 0
        for i in range(self.L):
            m, bit = self.mode[i], 1 << i
            down = not (self.up >> i) & 1
            if m == "flap" and r.random() < 0.1:
                self.up ^= bit
                self.count("link_up flap", hostile=True)
            if k in self.plan[i]:
                if m in ("probe", "tx_only"):
                    prx |= bit
                    rxf |= bit
                    self.count("probe (with rx_frame)", 2, hostile=down)
                elif m == "sparse":
                    prx |= bit
                    rxf |= bit
                    self.count("sparse probe", 2, hostile=True)
                else:
                    prx |= bit
                    self.count(f"{m} probe_rx", hostile=True)
            if m in ("data", "rx_only") and r.random() < 0.2:
                rxf |= bit
                self.count("rx_frame", hostile=down)
            if m in ("data", "tx_only", "tx_down") and r.random() < 0.2:
                txd |= bit
                self.count("tx_data", hostile=down)
            if m == "flap" and r.random() < 0.05:
                prx |= bit
                rxf |= bit
                self.count("probe on a flapping link", 2, hostile=True)
        return prx, rxf, txd

    def readies(self):
        out = []
        for i in range(self.L):
            if self.stall[i] > 0:
                self.stall[i] -= 1
                out.append(0)
            else:
                out.append(int(self.rng.random() < self.duty[i]))
        return out

    # --- checks --------------------------------------------------------------------------
    def check_outputs(self, what):
        """Between edges: ``healthy``, each port's valid and, while valid, its beat."""
        dut, model = self.dut, self.model
        h = int(dut.healthy.value)
        assert h == model.healthy, f"{what}: healthy {h:#x}, model {model.healthy:#x}"
        for i in range(self.L):
            v = int(self.valid[i].value)
            assert v == model.valid(i), f"{what}: m_probe_{i}_tvalid {v}, model {int(model.valid(i))}"
            if v:
                b = model.beat(i)
                frame = probe_frame(self.src, i, model.links[i].seq)
                chunk = frame[b * self.B : (b + 1) * self.B]
                want_keep = (1 << len(chunk)) - 1
                got = int(self.data[i].value) & ((1 << (8 * len(chunk))) - 1)
                assert got == int.from_bytes(chunk, "little"), (
                    f"{what}: m_probe_{i} beat {b} of PROBE seq {model.links[i].seq}: "
                    f"{got.to_bytes(len(chunk), 'little').hex()} != {chunk.hex()}"
                )
                assert int(self.keep[i].value) == want_keep, f"{what}: m_probe_{i} beat {b} tkeep"
                assert int(self.last[i].value) == (b == model.nbeats - 1), (
                    f"{what}: m_probe_{i} beat {b} tlast"
                )
                assert int(self.user[i].value) == 0, f"{what}: m_probe_{i} tuser set"
        # documented bounds, from the inputs alone
        c = self.clock
        for i in range(self.L):
            if not (h >> i) & 1:
                continue
            low = self.up_low_since[i]
            assert low is None or c - low < 1, f"{what}: link {i} healthy {c - low} clocks after link_up fell"
            heard = self.last_heard[i]
            bound = (self.K + 1) * self.T + 2
            assert heard is not None and c - heard <= bound, (
                f"{what}: link {i} healthy {c - (heard or 0)} clocks after the last frame (bound {bound})"
            )

    def check_counters(self, what):
        for i in range(self.L):
            want = self.model.counters(i)
            got = {n: int(getattr(self.dut, f"stat_{n}_{i}").value) for n in COUNTERS}
            assert got == want, f"{what}: link {i} counters {got}, model {want}"
            assert got["probes_sent"] == self.frames[i], (
                f"{what}: link {i} stat_probes_sent {got['probes_sent']} != PROBEs taken {self.frames[i]}"
            )

    # --- one clock -----------------------------------------------------------------------
    async def step(self, prx, rxf, txd, ready, rst=False):
        """Drive one clock's inputs (after the checks of the state before it) and wait for
        the next falling edge."""
        dut, model = self.dut, self.model
        dut.probe_rx.value = prx
        dut.rx_frame.value = rxf
        dut.tx_data.value = txd
        dut.link_up.value = self.up
        dut.rst.value = int(rst)
        for i in range(self.L):
            self.ready[i].value = ready[i]
            if not rst and model.valid(i) and ready[i]:
                self.partial[i] += 1
                if model.beat(i) == model.nbeats - 1:
                    self.frames[i] += 1
                    self.partial[i] = 0
        model.clock(prx, rxf, txd, self.up, ready, rst)
        if rst:
            self.clock = 0
            self.frames = [0] * self.L
            self.partial = [0] * self.L
            self.last_heard = [None] * self.L
            self.up_low_since = [None] * self.L
        else:
            self.clock += 1
            for i in range(self.L):
                if ((prx | rxf) >> i) & 1:
                    self.last_heard[i] = self.clock
                if (self.up >> i) & 1:
                    self.up_low_since[i] = None
                elif self.up_low_since[i] is None:
                    self.up_low_since[i] = self.clock
        await FallingEdge(dut.clk)
        self.wd.check()

    async def reset(self, clocks, what):
        self.wd.paused = True
        self.merged += sum(k.merged for k in self.model.links)
        self.dut.rst.value = 1
        self.src = self.rng.randrange(65536)
        self.dut.src_node.value = self.src
        for _ in range(clocks):
            await self.step(0, 0, 0, self.readies(), rst=True)
        self.wd.paused = False
        self.resets += 1
        self.check_outputs(f"{what}: right after reset")
        self.check_counters(f"{what}: right after reset")
        for i in range(self.L):
            assert not self.model.pending(i), f"{what}: model link {i} pending after reset"


@cocotb.test()
async def test_link_monitor_soak(dut):
    n = soak_inputs()
    rng = random.Random(2118)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    tb = Bench(dut, rng)
    L, T, M = tb.L, tb.T, tb.M
    dut.probe_rx.value = dut.rx_frame.value = dut.tx_data.value = 0
    dut.link_up.value = tb.up
    dut.rst.value = 1
    await FallingEdge(dut.clk)
    tb.wd.start()
    await tb.reset(2, "start")
    next_reset = rng.randint(10, 60) * T + rng.randrange(T)
    while tb.events < n:
        k = tb.model.timer
        if k == 0:
            tb.new_modes(k)
            tb.check_counters(f"clock {tb.clock} after reset {tb.resets}")
        if tb.clock >= next_reset:
            tb.check_counters(f"before reset {tb.resets + 1}")
            tb.count("reset", hostile=True)
            await tb.reset(rng.randint(1, 4), f"reset {tb.resets + 1}")
            next_reset = rng.randint(10, 60) * T + rng.randrange(T)
            continue
        prx, rxf, txd = tb.inputs(k)
        await tb.step(prx, rxf, txd, tb.readies())
        tb.check_outputs(f"clock {tb.clock} after reset {tb.resets}")
    tb.check_counters("end of the hostile phase")
    # Full return: every link up and probed once an interval, every port ready.
    tb.up = (1 << L) - 1
    tb.stall = [0] * L
    for c in range((M + 3) * T):
        k = tb.model.timer
        pulse = (1 << L) - 1 if k == T // 2 else 0
        await tb.step(pulse, pulse, 0, [1] * L)
        tb.check_outputs(f"recovery clock {c}")
    assert int(dut.healthy.value) == (1 << L) - 1, (
        f"links not all healthy after recovery: {int(dut.healthy.value):#x}"
    )
    sent0 = [int(getattr(dut, f"stat_probes_sent_{i}").value) for i in range(L)]
    for c in range(2 * T):
        k = tb.model.timer
        pulse = (1 << L) - 1 if k == T // 2 else 0
        await tb.step(pulse, pulse, 0, [1] * L)
        tb.check_outputs(f"recovery clock {c}")
    for i in range(L):
        sent = int(getattr(dut, f"stat_probes_sent_{i}").value) - sent0[i]
        assert sent == 2, f"link {i}: {sent} PROBEs in 2 idle intervals, not 2"
    tb.check_counters("end of recovery")
    await tb.reset(2, "final reset")
    for i in range(L):
        assert not int(tb.valid[i].value), f"m_probe_{i} valid after the final reset"
    dut._log.info(
        "link monitor soak: %d inputs, %d hostile (%.1f %%), %d resets, %d clocks since the last; "
        "%d tready stalls, PROBEs merged while one waited %d; inputs: %s",
        tb.events,
        tb.hostile,
        100.0 * tb.hostile / max(1, tb.events),
        tb.resets,
        tb.clock,
        tb.stalls,
        tb.merged,
        tb.tally.table(),
    )
