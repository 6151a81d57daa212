"""Grant arbiter soak (opengse.sim.soak): bogus control inputs in the closed loop of
opengse.sim.arbiter_bench, for ``OPENGSE_SOAK_N`` inputs (REQUESTs and arrivals the
arbiter accepted, real and bogus; most of them bogus). Eight saturated queues of four
sources run while the bench injects, every clock at random,

- arrivals for requesters the arbiter never saw: an unknown ``src_node``, a known
  ``src_node`` with an unknown ``dgsq``, or a known ``dgsq`` of an unknown ``src_node``
  (the CAM's two halves matched one at a time), any credits 0-65535, ``last`` random:
  each counted in ``stat_arr_unknown``, exactly, and ignored;
- REQUESTs from unknown keys (the same three kinds) with no backlog: no slot, no
  GRANT, no counter;
- in ``test_grant_arbiter_duplicate_requests`` also duplicated REQUESTs (a real one
  sent twice in a row): no extra GRANT.

Checks: the bench's own every clock (no egress overflow, ``outstanding`` <= buffer,
every GRANT's credit is one container, no GRANT to an unknown queue); a progress
watchdog on ``s_req``, ``s_arr`` and ``m_grant``; conservation at the end, each
counter against what the bench sent (``stat_grants`` = GRANTs taken,
``stat_requests`` = every REQUEST taken, ``stat_req_no_slot`` 0, ``stat_arr_unknown``
= the bogus arrivals, no lease written off, no GRANT on an empty queue, every
container the sources released taken back as an arrival); a full return
(``outstanding`` 0, ``slots_used`` 0, no GRANT valid)."""

from collections import Counter, deque

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from opengse.sim.arbiter_bench import ArbiterBench
from opengse.sim.soak import ProgressWatchdog, check_conservation, check_full_return, soak_inputs

CHUNK = 1000  # clocks between the bench's progress checks
N_SOURCES, N_QUEUES = 4, 8  # queue i: src_node 1 + i % 4, dgsq i
REAL = {(1 + i % N_SOURCES, i) for i in range(N_QUEUES)}
P_ARR, P_REQ = 0.3, 0.1  # bogus arrivals / bogus REQUESTs per clock
TAKEN = ("req_real_backlog", "req_real_zero", "req_bogus", "arr_real", "arr_bogus")  # the inputs


class _Appends(deque):
    """The bench's arrival queue, counting the containers the sources released."""

    containers = 0

    def append(self, item):
        if (item[1]["src_node"], item[1]["dgsq"]) in REAL:
            self.containers += item[1]["last"]
        super().append(item)


def _bogus_key(rng):
    """A key the arbiter never saw: unknown src_node, or one half of a live key."""
    kind = rng.randrange(3)
    if kind == 0:
        return "unknown", rng.randrange(100, 65536), rng.randrange(65536)
    if kind == 1:
        return "live_src", rng.randint(1, N_SOURCES), rng.randrange(N_QUEUES, 65536)
    return "live_dgsq", rng.randrange(N_SOURCES + 1, 65536), rng.randrange(N_QUEUES)


async def _count_fires(dut, seen):
    """What the arbiter took, port by port, sampled where the bench samples (ReadOnly
    of the clock the inputs are held for)."""
    while True:
        await RisingEdge(dut.clk)
        await ReadOnly()
        if int(dut.s_req_valid.value) and int(dut.s_req_ready.value):
            src, backlog = int(dut.s_req_src_node.value), int(dut.s_req_backlog.value)
            real = (src, int(dut.s_req_dgsq.value)) in REAL
            seen["req_real_backlog" if real and backlog else "req_real_zero" if real else "req_bogus"] += 1
            assert real or backlog == 0, f"bench bug: a bogus REQUEST with backlog {backlog}"
        if int(dut.s_arr_valid.value) and int(dut.s_arr_ready.value):
            real = (int(dut.s_arr_src_node.value), int(dut.s_arr_dgsq.value)) in REAL
            seen["arr_real" if real else "arr_bogus"] += 1
            seen["arr_real_last"] += int(real and int(dut.s_arr_last.value))
        if int(dut.m_grant_valid.value) and int(dut.m_grant_ready.value):
            seen["grants"] += 1


@cocotb.test()
async def test_grant_arbiter_soak(dut):
    """Unknown arrivals and unknown empty REQUESTs: strict (no lease written off)."""
    await run_soak(dut, dup_p=0.0, seed=1810)


@cocotb.test()
async def test_grant_arbiter_duplicate_requests(dut):
    """The same, plus duplicated REQUESTs. A copy applied after an arrival it did not
    know of is the "residual race" of docs/dgsq.md (issue 18 item 5): it may cost a
    lease write-off; everything else stays strict, and the write-offs are bounded by
    the copies sent."""
    await run_soak(dut, dup_p=0.3, seed=1812)


async def run_soak(dut, dup_p, seed):
    n = soak_inputs()
    tb = ArbiterBench(dut, seed=seed)
    tb.refresh = 4096
    tb.arrs = _Appends()
    tb.keep_pending = True
    await tb.start()
    for i in range(N_QUEUES):
        tb.add_queue(1 + i % N_SOURCES, i, tc=0, tenant=i % 4, pkt=tb.rng.choice((64, 1500)), saturate=True)
    sent = Counter()  # what the bench queued, by kind
    seen = Counter()  # what the arbiter took (_count_fires)
    cocotb.start_soon(_count_fires(dut, seen))
    await RisingEdge(dut.clk)  # (inputs idle) the counter samples from the next clock on
    wd = ProgressWatchdog(dut.clk, limit=4 * tb.p["lease_cycles"])
    wd.watch("s_req", dut.s_req_valid, dut.s_req_ready, "accepted", lambda: len(tb.reqs))
    wd.watch("s_arr", dut.s_arr_valid, dut.s_arr_ready, "accepted", lambda: len(tb.arrs))
    wd.watch("m_grant", dut.m_grant_valid, dut.m_grant_ready, "produced", tb.total_backlog)
    wd.start()
    requests, rng = tb._requests, tb.rng

    def hostile_requests():
        k = len(tb.reqs)
        requests()
        if len(tb.reqs) > k and rng.random() < dup_p:
            tb.reqs.append(dict(tb.reqs[-1]))  # the same REQUEST twice
            sent["dup"] += 1
        if rng.random() < P_ARR:
            kind, src, dgsq = _bogus_key(rng)
            fields = {
                "src_node": src,
                "dgsq": dgsq,
                "credits": rng.randrange(65536),
                "last": rng.randrange(2),
                "phantom": True,  # no data behind it: not in the bench's egress occupancy
            }
            tb.arrs.append((tb.now, fields))
            sent[f"arr_{kind}"] += 1
        if rng.random() < P_REQ:
            kind, src, dgsq = _bogus_key(rng)
            tb.reqs.append(
                {
                    "src_node": src,
                    "dgsq": dgsq,
                    "tc": rng.randrange(8),
                    "tenant": rng.randrange(4096),
                    "backlog": 0,
                    "seq": rng.randrange(65536),
                }
            )
            sent[f"req_{kind}"] += 1

    def taken():
        return sum(seen[k] for k in TAKEN)

    tb._requests = hostile_requests
    while taken() < n:
        await tb.run(CHUNK, drain=8, latency=24)
        wd.check()
    # Stop the bogus inputs and the sources; what is queued still goes in.
    tb._requests = requests
    tb.stop_saturation(lambda k: True)
    while tb.total_backlog() or tb.arrs or tb.reqs:
        await tb.run(CHUNK, drain=8, latency=24, until_empty=True)
        wd.check()
    await tb.run(3 * tb.p["lease_cycles"], drain=8, latency=24)
    wd.check()
    await RisingEdge(dut.clk)
    await ReadOnly()

    got = {k: tb.stat(k) for k in ("grants", "requests", "req_no_slot", "arr_unknown", "lease_expired")}
    got["room_stall"] = tb.stat("room_stall")
    bogus_arr = sum(v for k, v in sent.items() if k.startswith("arr_"))
    bogus_req = sum(v for k, v in sent.items() if k.startswith("req_"))
    assert seen["arr_bogus"] == bogus_arr and seen["req_bogus"] == bogus_req, (
        f"bogus inputs lost on the way in: sent {dict(sent)}, taken {dict(seen)}"
    )
    assert tb.empty_grants == 0, f"{tb.empty_grants} grants found an empty queue"
    expired = got["lease_expired"]
    expected = {"grants": seen["grants"], "arr_unknown": bogus_arr, "req_no_slot": 0}
    if dup_p:
        assert expired <= sent["dup"], f"{expired} leases written off for {sent['dup']} duplicated REQUESTs"
    else:
        expected["lease_expired"] = 0
    # Arrivals: every one taken is a real container's (no counter) or a bogus one.
    check_conservation(
        seen["arr_real"] + seen["arr_bogus"], seen["arr_real"], got, expected, ["arr_unknown"], "arrivals"
    )
    # stat_requests counts every REQUEST taken (with a slot or not, bogus too); none of
    # them finds the 64 slots full (stat_req_no_slot 0, in ``expected``).
    reqs = seen["req_real_backlog"] + seen["req_real_zero"] + seen["req_bogus"]
    assert got["requests"] == reqs, f"stat_requests {got['requests']} != {reqs} REQUESTs taken"
    assert seen["arr_real_last"] == tb.arrs.containers, (
        f"{tb.arrs.containers} containers released, {seen['arr_real_last']} taken back as arrivals"
    )
    # (s_req_ready / s_arr_ready follow valid: the engine's input stage takes the port
    # it chose, so they read 0 at rest and say nothing here.)
    check_full_return(dut, clear=("outstanding", "slots_used", "m_grant_valid"))
    dut._log.info(
        "arbiter soak: %d inputs taken (%d containers back), sent %s, taken %s, counters %s, %d clocks",
        taken(),
        seen["arr_real_last"],
        dict(sent),
        dict(seen),
        got,
        tb.now,
    )
