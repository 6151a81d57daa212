"""cocotb tests of the GrantArbiter (gse_grant_arbiter) in a closed loop.

One bench class drives the arbiter from plain-Python sources
(:class:`opengse.sim.dgsq_model.SourceModel`: queues, REQUEST triggers, GRANT
handling, whole-packet container release) and an egress-buffer model (arrivals after
a latency, a drain rate giving ``egress_room``), with optional loss of REQUESTs and
GRANTs and random back-pressure on ``m_grant``. Checks: no egress overflow (the
arrived data, counted per container up to its grant, plus the outstanding credit,
never exceeds the buffer), no grant finds an empty queue (lossless runs), fairness
(Jain), weighted shares, starvation bound, strict priority, no stall under loss.
"""

import os

import cocotb

from opengse.sim.dgsq_model import jain, units
from opengse.sim.arbiter_bench import ArbiterBench

PKT_BYTES = (64, 256, 1500, 9000)


def _shares(counts, keys):
    tot = sum(counts.get(k, 0) for k in keys)
    return {k: counts.get(k, 0) / tot for k in keys}


@cocotb.test()
async def test_fairness_equal(dut):
    """64 saturated requesters, equal weights: Jain >= 0.99; starvation bound; no
    overflow; no empty grant."""
    tb = ArbiterBench(dut, seed=11)
    tb.refresh = 4096
    await tb.start()
    n = tb.p["n_req"]
    keys = []
    for i in range(n):
        src, dg = 1 + i % 8, i // 8
        tb.add_queue(src, dg, tc=0, tenant=i % 4, pkt=tb.rng.choice(PKT_BYTES), saturate=True)
        keys.append((src, dg))
    await tb.run(2000, drain=8, latency=24)  # warm up
    base = dict(tb.counts)
    tb.max_gap = 0
    await tb.run(int(os.environ.get("DGSQ_FAIR_CYCLES", 12000)), drain=8, latency=24, grant_pause=0.1)
    got = [tb.counts.get(k, 0) - base.get(k, 0) for k in keys]
    j = jain(got)
    dut._log.info(
        "grants per requester: min %d max %d, Jain %.5f, max gap %d grants", min(got), max(got), j, tb.max_gap
    )
    assert sum(got) > 20 * n, f"too few grants: {sum(got)}"
    assert j >= 0.99, f"Jain's index {j:.4f} < 0.99"
    bound = 2 * n + 4  # two rounds of the class (docs/dgsq.md)
    assert tb.max_gap <= bound, f"a backlogged requester waited {tb.max_gap} grants > {bound}"
    assert tb.empty_grants == 0, f"{tb.empty_grants} grants found an empty queue"
    assert tb.stat("lease_expired") == 0


@cocotb.test()
async def test_weighted_tenants(dut):
    """Tenants with weights 1:2:3:4 (4 requesters each) get shares within 2%."""
    tb = ArbiterBench(dut, seed=12)
    tb.refresh = 4096
    await tb.start()
    weights = {0: 1, 1: 2, 2: 3, 3: 4}
    for t, w in weights.items():
        await tb.set_weight(t, w)
    keys = {}
    for i in range(16):
        t = i % 4
        src, dg = 1 + i, 0
        tb.add_queue(src, dg, tc=3, tenant=t, pkt=tb.rng.choice(PKT_BYTES), saturate=True)
        keys[(src, dg)] = t
    await tb.run(2000, drain=8, latency=24)
    base = dict(tb.counts)
    await tb.run(int(os.environ.get("DGSQ_FAIR_CYCLES", 12000)), drain=8, latency=24)
    per_t = {t: 0 for t in weights}
    for k, t in keys.items():
        per_t[t] += tb.counts.get(k, 0) - base.get(k, 0)
    tot = sum(per_t.values())
    wsum = sum(weights.values())
    for t, w in weights.items():
        dut._log.info("tenant %d weight %d: share %.4f (configured %.4f)", t, w, per_t[t] / tot, w / wsum)
    for t, w in weights.items():
        share, want = per_t[t] / tot, w / wsum
        assert abs(share - want) <= 0.02 * want, f"tenant {t}: share {share:.4f} vs {want:.4f}"
    assert tb.empty_grants == 0
    assert tb.stat("lease_expired") == 0, "a lease written off in a lossless run"


@cocotb.test()
async def test_strict_priority(dut):
    """While class 7 has backlog, class 0 gets nothing; then class 0 is served."""
    tb = ArbiterBench(dut, seed=13)
    tb.refresh = 4096
    await tb.start()
    for i in range(8):
        tb.add_queue(20 + i, 0, tc=0, tenant=0, saturate=True, pkt=1500)
    await tb.run(1500, drain=4, latency=8)
    low_before = len(tb.grants)
    assert low_before > 0
    for i in range(4):
        tb.add_queue(40 + i, 1, tc=7, tenant=1, saturate=True, pkt=9000)
    mark = tb.now
    await tb.run(8000, drain=4, latency=8)
    late = [g for g in tb.grants if g[0] > mark + 64]
    low = [g for g in late if g[2] == 0]
    high = [g for g in late if g[2] == 7]
    assert len(high) > 50, f"class 7 got {len(high)} grants"
    assert not low, f"class 0 got {len(low)} grants while class 7 was backlogged"
    tb.stop_saturation(lambda k: k[0] >= 40)
    mark = tb.now
    await tb.run(8000, drain=4, latency=8)
    low = [g for g in tb.grants if g[0] > mark and g[2] == 0]
    assert len(low) > 20, "class 0 not served after class 7 drained"
    assert tb.empty_grants == 0
    assert tb.stat("lease_expired") == 0, "a lease written off in a lossless run"
    assert tb.max_occ_clip > tb.BUF * 3 // 4, "egress buffer never filled: room check untested"
    # Spec-level, from the configuration only: the credit granted at once fits the buffer
    # (BUF / G containers at most), each container overruns by one maximum packet at most.
    # Issue 18's tighter "buffer + one maximum packet" does not hold: 308 units above.
    bound = tb.BUF // tb.G * units(max(PKT_BYTES))
    dut._log.info("max physical occupancy above the buffer: %d units (bound %d)", tb.max_occ_excess, bound)
    assert tb.max_occ_excess <= bound, (
        f"egress occupancy {tb.max_occ_excess} units above the buffer > {bound}"
    )


@cocotb.test()
async def test_room_and_churn(dut):
    """Random finite queues over all classes, varying room (slow drain), output
    back-pressure, slot reuse: no overflow, no empty grant, everything drains."""
    tb = ArbiterBench(dut, seed=14)
    tb.refresh = 2048
    tb.per_packet = True
    await tb.start()
    rng = tb.rng
    for wave in range(3):
        for i in range(80):  # more queues than slots: REQUESTs may find no slot
            tb.add_queue(
                rng.randrange(1, 16),
                rng.randrange(0, 32),
                tc=rng.randrange(8),
                tenant=rng.randrange(4096),
                nbytes=rng.randrange(64, 40000),
                pkt=rng.choice(PKT_BYTES),
            )
        await tb.run(
            40000,
            drain=rng.choice([2, 6, 16]),
            latency=rng.randrange(4, 64),
            grant_pause=0.3,
            until_empty=True,
        )
        assert tb.total_backlog() == 0, f"wave {wave}: {tb.total_backlog()} bytes stuck"
    assert tb.empty_grants == 0
    assert tb.stat("req_no_slot") > 0, "slot exhaustion not exercised"
    # Lossless: every GRANT ended in a container or a void the source reported
    # (docs/dgsq.md, "Void GRANTs"), so everything is back at once, without a lease.
    await tb.run(256, drain=16)
    assert int(dut.outstanding.value) == 0, "credit leaked"
    assert int(dut.slots_used.value) == 0, "slots leaked"
    assert tb.stat("lease_expired") == 0, f"{tb.stat('lease_expired')} leases written off (lossless)"


@cocotb.test()
async def test_control_loss(dut):
    """1e-3 (and 1e-2) of REQUESTs and GRANTs lost: no queue stalls (refresh and
    leases recover), losses show as GRANT seq gaps and lease expiries."""
    rates = [float(x) for x in os.environ.get("DGSQ_LOSS_RATES", "1e-3").split(",")]
    for loss, seed in zip(rates, (15, 16)):
        tb = ArbiterBench(dut, seed=seed)
        tb.refresh = 1024
        if seed == 15:
            await tb.start()
        exp0 = tb.stat("lease_expired")
        rng = tb.rng
        for i in range(64):
            tb.add_queue(
                1 + i % 8,
                i // 8 + (100 if seed == 16 else 0),
                tc=rng.randrange(8),
                tenant=i,
                nbytes=rng.randrange(20000, 200000),
                pkt=rng.choice(PKT_BYTES),
            )
        await tb.run(120000, loss=loss, drain=None, latency=32, until_empty=True)
        left = tb.total_backlog()
        gaps = sum(q.gaps for sm in tb.sources.values() for q in sm.queues.values())
        dut._log.info(
            "loss %g: lost %s, source-seen seq gaps %d, leases expired %d, cycles %d",
            loss,
            tb.lost,
            gaps,
            tb.stat("lease_expired") - exp0,
            tb.now,
        )
        assert left == 0, f"loss {loss}: {left} bytes stalled"
        if tb.lost["grant"]:
            assert tb.stat("lease_expired") > exp0
        await tb.run(3000, drain=None)  # let leases of lost grants run out
    assert int(dut.outstanding.value) == 0
