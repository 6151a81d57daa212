"""cocotb tests of the test-only chain generator -> impairer -> link -> checker
(tests/tb/gear_chain_top.py).

The bench configures the generator, then fails the link, holds frames back (reordering)
and flips bits (corruption) at random clocks; it watches what reaches the checker
(``tap_axis``) and feeds the checker model (sim/traffic_model.py) with it. At the end
the checker's counters and histogram equal the model's, the link's counters account for
every frame the generator sent, and each kind of damage was really seen.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from opengse.sim.cocotb_util import reset_dut, wait_until
from opengse.sim.runner import test_params
from opengse.sim.traffic_model import CheckerModel, GenConfig, generator_frames, parse_frame

COUNTERS = (
    "frames bytes good_frames good_bytes lost reordered duplicate late corrupt bad foreign lat_sum lat_max"
)
CHK = 9


class ChainBench:
    def __init__(self, dut, seed):
        self.dut, self.rng = dut, random.Random(seed)
        self.lanes = test_params()["data_width"] // 8
        self.model = CheckerModel(CHK)
        self.now = 0
        self.frames_seen = []
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    async def start(self, cfg, rate):
        d = self.dut
        for name in ("enable", "pause", "fail", "hold", "flip", "s_dst_valid", "hist_addr"):
            getattr(d, name).value = 0
        d.tap_axis_tready.value = 1
        d.chk_host.value = CHK
        d.host.value, d.frame_min.value, d.frame_max.value = cfg.host, cfg.frame_min, cfg.frame_max
        d.rate.value, d.flows.value, d.random.value = rate, cfg.n_flows, int(cfg.random)
        d.tenant.value, d.tc.value, d.seed.value = cfg.tenant, cfg.tc, cfg.seed
        await reset_dut(d)
        self.now = 1
        cocotb.start_soon(self._watch())
        for index, dst in enumerate(cfg.table):
            d.s_dst_index.value, d.s_dst_dst.value, d.s_dst_valid.value = index, dst, 1
            await RisingEdge(d.clk)
            await wait_until(d.clk, lambda: int(d.s_dst_ready.value), f"s_dst_ready for entry {index}", 1000)
            await RisingEdge(d.clk)
            d.s_dst_valid.value = 0
        # the checker's reset sweep (sources * flows = 1024 clocks) ends before the first
        # frame can reach it
        for _ in range(1100):
            await RisingEdge(d.clk)
        d.enable.value = 1

    async def _watch(self):
        """What reaches the checker, frame by frame, into the model."""
        d, buf, first = self.dut, b"", None
        while True:
            await RisingEdge(d.clk)
            self.now += 1
            await ReadOnly()
            if not int(d.tap_axis_tvalid.value):
                continue
            if not buf:
                first = self.now
            keep = int(d.tap_axis_tkeep.value)
            data = int(d.tap_axis_tdata.value).to_bytes(self.lanes, "little")
            buf += bytes(b for i, b in enumerate(data) if keep >> i & 1)
            if int(d.tap_axis_tlast.value):
                bad = bool(int(d.tap_axis_tuser.value) & 1)
                self.frames_seen.append((buf, bad, self.model.receive(buf, bad=bad, arrival=first)))
                buf = b""

    async def check(self):
        d = self.dut
        for name in COUNTERS.split():
            got, want = int(getattr(d, f"chk_stat_{name}").value), self.model.c[name]
            assert got == want, f"chk_stat_{name} = {got}, model {want}"
        for t, want in enumerate(self.model.tenant_bytes):
            got = int(getattr(d, f"chk_stat_tenant_bytes_{t}").value)
            assert got == want, f"chk_stat_tenant_bytes[{t}] = {got}, model {want}"
        for b, want in enumerate(self.model.hist):
            d.hist_addr.value = b
            await RisingEdge(d.clk)
            await RisingEdge(d.clk)
            got = int(d.hist_data.value)
            assert got == want, f"histogram bin {b} = {got}, model {want}"


@cocotb.test()
async def test_chain(dut):
    """Loss by link failure, reordering by hold, corruption by flip: the checker counts
    what arrived exactly as the model; the link accounts for every frame sent."""
    tb = ChainBench(dut, 1)
    cfg = GenConfig(
        host=3, table=[CHK, CHK], frame_min=60, frame_max=700, random=True, tenant=2, tc=1, seed=77
    )
    await tb.start(cfg, rate=round(0.7 * 65536))
    d, rng = dut, tb.rng
    for t in range(60_000):
        await RisingEdge(d.clk)
        d.fail.value = int(t % 3000 < 40 and t > 1000)  # 40-clock failures every 3000 clocks
        d.hold.value = int(rng.random() < 0.06)
        d.flip.value = int(rng.random() < 0.0015)
    d.enable.value = d.fail.value = d.hold.value = d.flip.value = 0
    await wait_until(
        d.clk,
        lambda: int(d.link_stat_frames.value) == int(d.gen_stat_frames.value),
        "every frame sent to reach the far end of the link",
        20_000,
    )
    # the last frame still crosses the receive gearbox and the checker's pipeline (its
    # counters settle 3-6 clocks after the last beat): a margin well past both
    for _ in range(200):
        await RisingEdge(d.clk)
    await tb.check()

    sent = int(d.gen_stat_frames.value)
    assert int(d.link_stat_frames.value) == sent
    lost_on_link = int(d.link_stat_frames_lost.value)
    whole = [f for f in tb.frames_seen if not f[1]]
    assert len(whole) == sent - lost_on_link, (
        f"{len(whole)} whole frames arrived; {sent} sent, {lost_on_link} lost on the link"
    )
    cut = [f for f in tb.frames_seen if f[1]]
    assert int(d.chk_stat_bad.value) == len(cut) > 0, "no frame was cut by a failure"
    # every whole, undamaged frame is one the generator sent
    expected = {(f["flow"], f["seq"]): f["size"] for f in generator_frames(cfg, sent)}
    for raw, _, outcome in whole:
        if outcome == "good":
            p = parse_frame(raw)
            assert expected.get((p["flow"], p["seq"])) == len(raw), f"frame {p} was never sent"
    c = tb.model.c
    for name in ("lost", "reordered", "corrupt"):
        assert c[name] > 0, f"no {name} frames: {c}"
    # net loss = the seqs of each flow never delivered good, below its newest good one
    good = {}
    for raw, _, outcome in whole:
        if outcome == "good":
            p = parse_frame(raw)
            good.setdefault(p["flow"], set()).add(p["seq"])
    gaps = sum(max(seqs) + 1 - len(seqs) for seqs in good.values())
    assert c["lost"] == gaps, f"lost {c['lost']}, seq gaps among the frames sent {gaps}"
    assert gaps >= lost_on_link - 2 * len(good), "link losses missing from the gaps"
    dut._log.info(f"sent {sent}, lost on link {lost_on_link}, counters {c}")
