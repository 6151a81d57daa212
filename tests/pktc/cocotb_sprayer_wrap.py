"""The sprayer's per-destination ``seq`` across 65535 -> 0.

The seq table restarts at 0 after reset and the bench cannot preset it, so the test
sends 65536 + 64 one-packet containers (32-byte tagged frames, 4 beats at 64 bits) to
one destination with a lean driver (one coroutine, no cocotbext-axi: Python touches
each clock once), every uplink ready and healthy. Every container's seq is read off
its uplink (bytes 24-25, beat 3) and the containers, in the order they left, must
carry 0, 1, ..., 65535, 0, 1, ..., 63: consecutive mod 2^16, none missing or
repeated; per-uplink container counters add up to the count sent."""

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from opengse.sim.runner import test_params
from opengse.sim.soak import gse_header

EXTRA = 64


@cocotb.test()
async def test_sprayer_seq_wrap(dut):
    p = test_params()
    U, W = p["uplinks"], p["data_width"] // 8
    assert W == 8, "the lean driver is written for 64-bit beats"
    n = 65536 + EXTRA
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.s_axis_tvalid.value = 0
    dut.s_meta_valid.value = 0
    dut.s_ctrl_tvalid.value = 0
    dut.healthy.value = (1 << U) - 1
    for i in range(U):
        getattr(dut, f"m_axis_{i}_tready").value = 1
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 4 * p["nodes"])  # seq table cleared
    dst = 5
    frame = bytes(12) + (0x88B5).to_bytes(2, "big") + gse_header(type=0, dst_node=dst, ttl=9, len=14)
    beats = [int.from_bytes(frame[k : k + 8], "little") for k in range(0, 32, 8)]
    dut.s_meta_dst_node.value = dst
    dut.s_meta_dgsq.value = 0
    dut.s_meta_ttl.value = 9
    dut.s_meta_len.value = 14
    dut.s_meta_last.value = 1
    dut.s_axis_tkeep.value = 0xFF
    dut.s_axis_tuser.value = 0
    ups = [
        (
            getattr(dut, f"m_axis_{i}_tvalid"),
            getattr(dut, f"m_axis_{i}_tdata"),
            getattr(dut, f"m_axis_{i}_tlast"),
        )
        for i in range(U)
    ]
    pos = [0] * U  # beat index within the current frame, per uplink
    seqs = []
    sent, beat, quiet = 0, 0, 0
    while len(seqs) < n:
        if sent < n:
            dut.s_axis_tdata.value = beats[beat]
            dut.s_axis_tlast.value = int(beat == 3)
            dut.s_axis_tvalid.value = 1
            dut.s_meta_valid.value = int(beat == 0)
        else:
            dut.s_axis_tvalid.value = 0
            dut.s_meta_valid.value = 0
        await RisingEdge(dut.clk)
        if sent < n and int(dut.s_axis_tready.value):
            beat += 1
            if beat == 4:
                beat, sent = 0, sent + 1
        moved = False
        for i, (v, d, last) in enumerate(ups):
            if int(v.value):
                moved = True
                if pos[i] == 3:
                    lanes = int(d.value)
                    seqs.append(((lanes & 0xFF) << 8) | ((lanes >> 8) & 0xFF))
                pos[i] = 0 if int(last.value) else pos[i] + 1
        quiet = 0 if moved else quiet + 1
        assert quiet < 1000, (
            f"no beat produced on any uplink for 1000 clocks ({len(seqs)} of {n} containers out)"
        )
    dut.s_axis_tvalid.value = 0
    dut.s_meta_valid.value = 0
    await ClockCycles(dut.clk, 20)
    want = [k & 0xFFFF for k in range(n)]
    if seqs != want:
        i = next(k for k, (a, b) in enumerate(zip(seqs, want)) if a != b)
        raise AssertionError(
            f"container {i}: seq {seqs[i]} != {want[i]} (around: {seqs[max(0, i - 3) : i + 3]})"
        )
    total = sum(int(getattr(dut, f"stat_containers_{i}").value) for i in range(U))
    assert total == n, f"stat_containers_* add up to {total}, sent {n}"
    dut._log.info("sprayer seq wrap: %d containers, seq 0..65535 then 0..%d", n, EXTRA - 1)
