"""GRANT seqs across 65535 -> 0 at the grant arbiter, in the closed loop of
opengse.sim.arbiter_bench (plain-Python sources and egress).

The first GRANT after the arbiter takes a slot carries the REQUEST's ``seq`` + 1
(docs/dgsq.md), so the bench starts each source queue's acknowledged seq near the
wrap (65500, 65530, 65535) and one at 0, and lets four saturated queues run. Every
GRANT's seq is recorded: per queue they must start at the REQUEST's seq + 1 and run
consecutively mod 2^16 (the sources see no gap), the three queues near the wrap must
cross 65535 -> 0, and the loop stays lossless (no empty grant, no lease written off)."""

import cocotb

from opengse.sim.arbiter_bench import ArbiterBench

STARTS = {(1, 0): 65500, (2, 1): 65530, (3, 2): 65535, (4, 3): 0}


@cocotb.test()
async def test_grant_seq_wrap(dut):
    tb = ArbiterBench(dut, seed=1809)
    tb.refresh = 4096
    await tb.start()
    for (src, dg), start in STARTS.items():
        tb.add_queue(src, dg, tc=0, tenant=src % 4, pkt=1500, saturate=True)
        q = tb.sources[src].queues[dg]
        q.ack, q.have_ack = start, 1
    seqs = {k: [] for k in STARTS}
    on_grant = tb._on_grant

    def record(g):
        seqs[(g["src_node"], g["dgsq"])].append(g["seq"])
        on_grant(g)

    tb._on_grant = record
    await tb.run(6000, drain=8, latency=24)
    for key, start in STARTS.items():
        got = seqs[key]
        assert len(got) >= 60, f"queue {key}: only {len(got)} grants"
        want = [(start + 1 + k) & 0xFFFF for k in range(len(got))]
        assert got == want, f"queue {key}: grant seqs {got[:8]}... not consecutive from {start + 1} mod 2^16"
        if start > 65000:  # the REQUEST's seq, then the GRANTs: 65535 followed by 0
            run = [start] + got
            assert 65535 in run and run[run.index(65535) + 1] == 0, f"queue {key}: no wrap"
        assert tb.sources[key[0]].queues[key[1]].gaps == 0, f"queue {key}: the source saw a GRANT gap"
    assert tb.empty_grants == 0, f"{tb.empty_grants} grants found an empty queue"
    assert tb.stat("lease_expired") == 0, f"{tb.stat('lease_expired')} leases written off"
    dut._log.info("grant seq wrap: %s grants per queue", {k: len(v) for k, v in seqs.items()})
