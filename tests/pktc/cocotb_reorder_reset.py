"""Random resets of the reorder buffer in mid-traffic: containers of every source
(shuffled within the window, bad, duplicated and lost ones mixed in) with ``rst``
asserted at a random clock, several times. After each reset the buffer must come back
clean: no output for 200 clocks, every counter 0, and then, from seq 0 again (the
bench resets its sources too, docs/pktc.md), a full window of containers per source
accepted at once and delivered whole and in order (no slot leaked), with a random
mix after it conserved exactly (ReorderTB.finish: every counter)."""

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from cocotb_reorder import STATS, ReorderTB
from opengse.sim.pktc_model import ReorderChecker

RESETS = 4


@cocotb.test()
async def test_reorder_random_resets(dut):
    tb = ReorderTB(dut, 1806)
    await tb.reset()
    N, W = tb.p["sources"], tb.p["window"]
    for r in range(RESETS):
        tb.set_pauses(0.1, 0.2)
        for s in range(N):
            for q in range(tb.rng.randint(2, W)):
                tb.send_container(s, q, tb.container(s, q), tb.rng.choice(("good", "good", "bad", "dup")))
        await ClockCycles(dut.clk, tb.rng.randint(1, 600))
        tb.source.clear()
        await tb.reset()
        tb.sink.clear()
        tb.checker = ReorderChecker()
        tb.expect_stats = {n: 0 for n in STATS}
        tb.sent_containers.clear()
        out = 0
        for _ in range(200):
            await RisingEdge(dut.clk)
            out += int(dut.m_axis_tvalid.value)
        assert not out, f"reset {r}: stale output ({out} valid clocks)"
        assert tb.sink.empty(), f"reset {r}: frames out after reset"
        got = await tb.stats()
        assert not any(got.values()), f"reset {r}: counters not cleared: {got}"
        # A full window per source at once: every slot must be free again.
        tb.set_pauses(0.01, 0.01)  # (a None pause generator would leave a pause stuck on)
        for s in range(N):
            for q in range(W):
                tb.send_container(s, q, tb.container(s, q, nframes=1))
        for s in range(N):
            await tb.wait_delivered(s, W, limit=20_000)
        tb.set_pauses(0.2, 0.3)
        # Then blocks of W/2 per source, shuffled, with bad and lost containers.
        for start in range(W, 3 * W, W // 2):
            for s in range(N):
                seqs = list(range(start, start + W // 2))
                tb.rng.shuffle(seqs)
                for q in seqs:
                    last = q == start + W // 2 - 1
                    kind = "good" if last else tb.rng.choice(("good", "good", "good", "bad", "lost"))
                    tb.send_container(s, q, tb.container(s, q), kind)
            for s in range(N):
                await tb.wait_delivered(s, len(tb.checker.expected[s]))
        await tb.finish()
    dut._log.info("reorder: %d random resets, clean each time", RESETS)
