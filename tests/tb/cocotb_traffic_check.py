"""cocotb tests of gse_traffic_check (rtl/tb/traffic_check.py) against the checker model
of sim/traffic_model.py (CheckerModel).

The bench builds generator frames with the model (scapy) for several sources and flows,
then spoils the sequence on purpose: skipped seqs (loss), swapped and late frames
(reordering), repeats (duplicates), very old seqs (late), flipped bytes (corruption),
frames for another host or not UDP/4791 or too short (foreign), tuser set (bad). It
drives them beat by beat with random idle clocks; every counter and the latency
histogram must equal the model's.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from opengse.sim.cocotb_util import reset_dut
from opengse.sim.runner import test_params
from opengse.sim.traffic_model import CheckerModel, GenConfig, frame_bytes

COUNTERS = (
    "frames bytes good_frames good_bytes lost reordered duplicate late corrupt bad foreign lat_sum lat_max"
)


class CheckBench:
    def __init__(self, dut, seed):
        self.dut, self.rng = dut, random.Random(seed)
        p = test_params()
        self.lanes = p["data_width"] // 8
        self.host = 7
        self.model = CheckerModel(
            self.host, p["sources"], p["flows"], p["tenants"], p["bins"], p["bin_shift"]
        )
        self.now = 0
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    async def start(self):
        d = self.dut
        d.s_axis_tvalid.value = 0
        d.host.value = self.host
        d.hist_addr.value = 0
        await reset_dut(d)
        self.now = 1  # the checker's clock count in the clock after reset_dut returns
        # the reset sweep: max(sources * flows, bins) clocks
        for _ in range(4200):
            await self.clock()

    async def clock(self):
        await RisingEdge(self.dut.clk)
        self.now += 1

    async def send(self, raw, bad=False, gap=0.2):
        """Drive one frame, beat by beat with random idle clocks, and tell the model."""
        d, n = self.dut, self.lanes
        arrival = None
        beats = [raw[i : i + n] for i in range(0, len(raw), n)]
        for k, chunk in enumerate(beats):
            while self.rng.random() < gap:
                d.s_axis_tvalid.value = 0
                await self.clock()
            last = k == len(beats) - 1
            d.s_axis_tvalid.value = 1
            d.s_axis_tdata.value = int.from_bytes(chunk.ljust(n, b"\0"), "little")
            d.s_axis_tkeep.value = (1 << len(chunk)) - 1 if last else (1 << n) - 1
            d.s_axis_tlast.value = int(last)
            d.s_axis_tuser.value = int(bad and last)
            if k == 0:
                arrival = self.now
            await self.clock()
        d.s_axis_tvalid.value = 0
        return self.model.receive(raw, bad=bad, arrival=arrival)

    async def check(self):
        d = self.dut
        for _ in range(10):
            await self.clock()
        for name in COUNTERS.split():
            got, want = int(getattr(d, f"stat_{name}").value), self.model.c[name]
            assert got == want, f"stat_{name} = {got}, model {want}"
        for t, want in enumerate(self.model.tenant_bytes):
            got = int(getattr(d, f"stat_tenant_bytes_{t}").value)
            assert got == want, f"stat_tenant_bytes[{t}] = {got}, model {want}"
        for b, want in enumerate(self.model.hist):
            d.hist_addr.value = b
            await self.clock()
            await RisingEdge(d.clk)
            got = int(d.hist_data.value)
            assert got == want, f"histogram bin {b} = {got}, model {want}"


def stamp(cfg, frame, now, rng):
    """The frame sent ``lat`` clocks before it arrives at ``now`` (its first beat)."""
    lat = rng.choice([rng.randrange(0, 300), rng.randrange(0, 5000)])
    return frame_bytes(cfg, frame, (now - lat) & 0xFFFFFFFF)


@cocotb.test()
async def test_outcomes(dut):
    """Every outcome, mixed over 4 sources x 3 flows, counted exactly as the model."""
    tb = CheckBench(dut, 1)
    await tb.start()
    rng = tb.rng
    cfgs = [GenConfig(host=s, table=[tb.host] * 3, tenant=s * 5 + 1, tc=s % 8, seed=s + 10) for s in range(4)]
    seqs = {(s, f): 0 for s in range(4) for f in range(3)}
    held = []  # frames kept back to be sent late (reordering)
    outcomes = {}
    for _ in range(600):
        s, f = rng.randrange(4), rng.randrange(3)
        cfg = cfgs[s]
        size = rng.choice([60, 61, 64, 65, 100, 333, 1500])
        seq = seqs[(s, f)]
        roll = rng.random()
        if roll < 0.08:  # loss: skip a few seqs
            seq += rng.randrange(1, 5)
        seqs[(s, f)] = seq + 1
        frame = {"flow": f, "dst": tb.host, "seq": seq, "size": size}
        raw = stamp(cfg, frame, tb.now, rng)
        bad = False
        if roll < 0.16 and roll >= 0.08:  # reordering: this one later
            held.append((cfg, frame))
            continue
        if 0.16 <= roll < 0.2:  # corruption of the filler or of a field
            i = rng.choice([rng.randrange(60, size) if size > 60 else 59, 46, 51, 58])
            raw = raw[:i] + bytes([raw[i] ^ (1 << rng.randrange(8))]) + raw[i + 1 :]
        elif 0.2 <= roll < 0.23:  # network-flagged bad frame
            bad = True
        elif 0.23 <= roll < 0.27:  # foreign: another host, another port, too short, source too big
            kind = rng.randrange(4)
            if kind == 0:
                raw = frame_bytes(cfg, dict(frame, dst=tb.host + 1), 0)
            elif kind == 1:
                raw = raw[:36] + b"\x12\xb8" + raw[38:]
            elif kind == 2:
                raw = raw[: rng.randrange(1, 60)]
            else:
                raw = frame_bytes(GenConfig(host=200, table=[tb.host]), frame, 0)
        outcome = await tb.send(raw, bad)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if held and rng.random() < 0.3:
            hc, hf = held.pop(0)
            outcome = await tb.send(stamp(hc, hf, tb.now, rng))
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if rng.random() < 0.03:  # duplicate of something recent of this flow
            dup = dict(frame, seq=max(0, seq - rng.randrange(0, 3)))
            outcome = await tb.send(stamp(cfg, dup, tb.now, rng))
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if rng.random() < 0.05 and seq > 36:  # far too old: beyond the window of 32
            outcome = await tb.send(stamp(cfg, dict(frame, seq=seq - 36), tb.now, rng))
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    for hc, hf in held:
        outcome = await tb.send(stamp(hc, hf, tb.now, rng))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    await tb.check()
    c = tb.model.c
    for name in ("lost", "reordered", "duplicate", "late", "corrupt", "bad", "foreign"):
        assert c[name] > 0, f"the traffic produced no {name} frames: {outcomes}"
    assert tb.model.hist[-1] > 0, "nothing in the overflow bin"
    dut._log.info(f"outcomes {outcomes}, counters {c}")


@cocotb.test()
async def test_back_to_back(dut):
    """60-byte frames back to back (no idle clock) of one flow, in order: all good."""
    tb = CheckBench(dut, 2)
    await tb.start()
    cfg = GenConfig(host=3, table=[tb.host])
    for seq in range(200):
        await tb.send(stamp(cfg, {"flow": 0, "dst": tb.host, "seq": seq, "size": 60}, tb.now, tb.rng), gap=0)
    await tb.check()
    assert tb.model.c["good_frames"] == 200 and tb.model.c["lost"] == 0
