"""Random resets of the container sprayer in mid-traffic, with a lean one-coroutine
driver (32-byte tagged packets, 4 beats at 64 bits; containers of 1-3 packets to 3
destinations; random ``tready`` on the uplinks). ``rst`` is asserted at a random clock,
mid-packet as a rule, several times. After each reset: no uplink beat while the seq
table clears, every counter 0; then fresh containers must leave whole, each
destination's seqs restarting at 0 and consecutive in the order the containers leave,
FIRST on the first packet and LAST on the last, and the per-uplink container counters
adding up to the containers sent."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from opengse.sim.runner import test_params
from opengse.sim.soak import gse_header

FIRST, LAST = 1, 2
EPOCHS = 5
DSTS = (1, 6, 11)


def packet_beats(dst):
    frame = bytes(12) + (0x88B5).to_bytes(2, "big") + gse_header(type=0, dst_node=dst, ttl=9, len=14)
    return [int.from_bytes(frame[k : k + 8], "little") for k in range(0, 32, 8)]


async def drive(dut, rng, ups, containers, clocks, p_ready, log):
    """Send ``containers`` ([(dst, npkts)]) for at most ``clocks`` clocks (None: until all
    left); record each container's (dst, seq, flags of each packet) in ``log`` in the
    order they leave. Returns the containers fully accepted."""
    todo = [(dst, k, n) for dst, n in containers for k in range(n)]
    beats_of = {d: packet_beats(d) for d in DSTS}
    pi, beat, c = 0, 0, 0
    pos = [0] * len(ups)
    cur = [None] * len(ups)  # per uplink: [dst, seq, [flags]]
    n_cont = len(containers)
    while (clocks is None and len(log) < n_cont) or (clocks is not None and c < clocks):
        if pi < len(todo):
            dst, k, n = todo[pi]
            dut.s_axis_tdata.value = beats_of[dst][beat]
            dut.s_axis_tlast.value = int(beat == 3)
            dut.s_axis_tvalid.value = 1
            dut.s_meta_valid.value = int(beat == 0)
            dut.s_meta_dst_node.value = dst
            dut.s_meta_last.value = int(k == n - 1)
        else:
            dut.s_axis_tvalid.value = 0
            dut.s_meta_valid.value = 0
        for _, rdy, _, _ in ups:
            rdy.value = int(rng.random() < p_ready)
        await RisingEdge(dut.clk)
        c += 1
        assert c < 200_000, f"containers not out after 200000 clocks ({len(log)} of {n_cont})"
        if pi < len(todo) and int(dut.s_axis_tready.value):
            beat += 1
            if beat == 4:
                beat, pi = 0, pi + 1
        for i, (v, rdy, d, last) in enumerate(ups):
            if int(v.value) and int(rdy.value):
                if pos[i] == 1:  # bytes 8-15: flags is byte 15
                    flags = (int(d.value) >> 56) & 0xFF
                    if cur[i] is None:
                        cur[i] = [None, None, []]
                    cur[i][2].append(flags)
                if pos[i] == 2:  # bytes 16-23: dst_node is bytes 20-21
                    lanes = int(d.value)
                    cur[i][0] = (((lanes >> 32) & 0xFF) << 8) | ((lanes >> 40) & 0xFF)
                if pos[i] == 3:
                    lanes = int(d.value)
                    cur[i][1] = ((lanes & 0xFF) << 8) | ((lanes >> 8) & 0xFF)
                    if cur[i][2][-1] & LAST:
                        log.append(tuple(cur[i][:2]) + (tuple(cur[i][2]),))
                        cur[i] = None
                pos[i] = 0 if int(last.value) else pos[i] + 1
    return pi


@cocotb.test()
async def test_sprayer_random_resets(dut):
    p = test_params()
    U, nodes = p["uplinks"], p["nodes"]
    rng = random.Random(1808)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    for sig in (dut.s_axis_tvalid, dut.s_meta_valid, dut.s_ctrl_tvalid):
        sig.value = 0
    dut.healthy.value = (1 << U) - 1
    dut.s_axis_tkeep.value = 0xFF
    dut.s_axis_tuser.value = 0
    dut.s_meta_dgsq.value = 0
    dut.s_meta_ttl.value = 9
    dut.s_meta_len.value = 14
    ups = [
        tuple(getattr(dut, f"m_axis_{i}_t{s}") for s in ("valid", "ready", "data", "last")) for i in range(U)
    ]
    for epoch in range(EPOCHS):
        dut.rst.value = 1
        await ClockCycles(dut.clk, rng.randint(1, 3))
        dut.rst.value = 0
        dut.s_axis_tvalid.value = 0
        dut.s_meta_valid.value = 0
        stale = 0
        for _ in range(4 * nodes):
            await RisingEdge(dut.clk)
            stale += sum(int(v.value) for v, _, _, _ in ups)
        assert not stale, f"epoch {epoch}: {stale} uplink beats after reset (stale output)"
        for i in range(U):
            got = int(getattr(dut, f"stat_containers_{i}").value), int(getattr(dut, f"stat_bytes_{i}").value)
            assert got == (0, 0), f"epoch {epoch}: uplink {i} counters {got} after reset"
        conts = [(rng.choice(DSTS), rng.randint(1, 3)) for _ in range(rng.randint(30, 80))]
        log = []
        await drive(dut, rng, ups, conts, None, 0.7, log)
        want_seq = {d: 0 for d in DSTS}
        for k, ((dst, n), (gdst, seq, flags)) in enumerate(zip(conts, log)):
            assert gdst == dst, f"epoch {epoch}: container {k} to {gdst}, sent to {dst}"
            assert seq == want_seq[dst], (
                f"epoch {epoch}: container {k} to {dst}: seq {seq} != {want_seq[dst]}"
            )
            want_seq[dst] = (seq + 1) & 0xFFFF
            want = tuple((FIRST if j == 0 else 0) | (LAST if j == n - 1 else 0) for j in range(n))
            assert tuple(f & 3 for f in flags) == want, (
                f"epoch {epoch}: container {k} flags {flags} != {want}"
            )
        await ClockCycles(dut.clk, 4)
        total = sum(int(getattr(dut, f"stat_containers_{i}").value) for i in range(U))
        assert total == len(conts), f"epoch {epoch}: stat_containers_* {total} != {len(conts)}"
        # More traffic, cut by a reset at a random clock (the next epoch starts with it).
        more = [(rng.choice(DSTS), rng.randint(1, 3)) for _ in range(40)]
        await drive(dut, rng, ups, more, rng.randint(1, 300), 0.7, [])
    dut._log.info("sprayer: %d random resets, seqs restart at 0, containers whole", EPOCHS)
