"""Random resets of the VOQ buffer in mid-traffic: ``rst`` asserted at a random point
of concurrent enqueue and release traffic (hostile packets of cocotb_voq_soak), several
times a test. After each reset the buffer must come back clean (every cell free,
nothing queued or in flight, every queue and tenant empty with zero drops, the drop
counters at 0, no output for 200 clocks, the invariant flag clear), then conserve
again on fresh traffic predicted exactly by the model (fill, release, drain, full
return)."""

import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from cocotb_voq import CELLS, CREDIT_MAX_FIELD, P, VOQBench, model
from cocotb_voq_soak import hostile_packet, send
from opengse.sim.soak import check_full_return
from opengse.sim.voq_model import DROP_REASONS

RESETS = 5


async def clean_after_reset(tb, nq, nt, what):
    dut = tb.dut
    seen = 0
    for _ in range(200):
        await RisingEdge(dut.clk)
        seen += int(dut.m_axis_tvalid.value) + int(dut.m_deq_done_valid.value) + int(dut.m_desc_valid.value)
    assert not seen, f"{what}: stale output after reset ({seen} valid clocks on m_axis/m_deq_done/m_desc)"
    check_full_return(
        dut,
        {
            "stat_free_cells": CELLS,
            "stat_queued_cells": 0,
            "stat_deq_cells": 0,
            "stat_enq_cells": 0,
            "stat_enq_pkts": 0,
            "stat_deq_pkts": 0,
            **{f"stat_drop_{r}": 0 for r in DROP_REASONS},
        },
        ("stat_invariant_err",),
        what,
    )
    for q in range(nq):
        got = await tb.query(queue=q)
        assert (got["pkts"], got["bytes"], got["cells"], got["drops"]) == (0, 0, 0, 0), (
            f"{what}: queue {q} {got}"
        )
    for t in range(nt):
        got = await tb.query(tenant=t)
        assert (got["tcells"], got["tdrops"]) == (0, 0), f"{what}: tenant {t} {got}"


@cocotb.test()
async def test_voq_random_resets(dut):
    rng = random.Random(1803)
    tb = VOQBench(dut, seed=1803)
    await tb.reset()
    nq, nt = min(P["queues"], 8), min(P["tenants"], 4)
    tb.set_backpressure(p_in_idle=0.1, p_out_pause=0.2)
    for r in range(RESETS):
        # Traffic with no model: packets and releases at once, then rst at a random clock.
        for i in range(rng.randint(10, 60)):
            pkt, frame, _ = hostile_packet(tb, rng, i, nq, nt)
            tb.meta_q.append((pkt.queue, pkt.tenant, len(pkt.data)))
            tb.src.send_nowait(frame)
        for _ in range(rng.randint(1, 8)):
            tb.request(rng.randrange(nq), rng.choice((64, 1500, CREDIT_MAX_FIELD)))
        await ClockCycles(dut.clk, rng.randint(1, 1500))
        tb.meta_q.clear()
        tb.deq_q.clear()
        tb.src.clear()
        await tb.reset()
        tb.sink.clear()
        tb.done.clear()
        tb.desc.clear()
        tb.sent.clear()
        tb.seq.clear()
        await clean_after_reset(tb, nq, nt, f"reset {r}")
        # Fresh traffic: conserve exactly again.
        m = model()
        released = 0
        n_fresh = rng.randint(30, 80)
        for i in range(n_fresh):
            pkt, frame, _ = hostile_packet(tb, rng, i, nq, nt)
            m.enqueue(pkt)
            await send(tb, pkt, frame)
        await tb.idle(timeout=50_000)
        for q in range(nq):
            while m.q[q]:
                exp = m.release(q, CREDIT_MAX_FIELD)
                tb.request(q, CREDIT_MAX_FIELD)
                ((rq, nb, npk, frames),) = await tb.collect(1, timeout=50_000)
                tb.check_release(q, CREDIT_MAX_FIELD, nb, npk, frames, exp)
                released += npk
        await tb.check_counters(m, queues=range(nq), tenants=range(nt))
        drops = sum(int(getattr(dut, f"stat_drop_{x}").value) for x in DROP_REASONS)
        assert released + drops == n_fresh, (
            f"after reset {r}: released {released} + drops {drops} != sent {n_fresh}"
        )
        assert int(dut.stat_enq_pkts.value) == int(dut.stat_deq_pkts.value) == released == m.enq_pkts
        await tb.final_checks()
    dut._log.info("voq: %d random resets, clean each time", RESETS)
