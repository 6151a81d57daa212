"""DGSQ manager bogus-input soak (issue 18) in the closed loop of cocotb_dgsq_manager:
``OPENGSE_SOAK_N`` packets (1e4 by default) of 12 keys, and about one bogus GRANT
every 20 clocks among the real ones:

- GRANTs that must have no effect and count in ``stat_grant_unknown``: a wrong
  ``type`` (REQUEST, with a live context's own key), a ``dgsq`` beyond the pool, a
  live context's ``dgsq`` from a ``src_node`` no key has or for another ``port``;
- GRANTs with the right key and a stale ``seq`` (a repeat, or up to 100 behind, of
  0-2 credit units): applied (their credit counts), each ``seq`` other than the last
  one + 1 counted in ``stat_grant_gap`` (predicted by the shadow SourceModel, which
  also predicts every release they cause).

Checked: every release and REQUEST as in the closed-loop bench, every byte
delivered, ``stat_grant_unknown`` and ``stat_grant_gap`` exact, and full return at
the end: all contexts freed (``ctx_used`` 0, ``stat_freed`` == ``stat_alloc``)."""

import cocotb

from cocotb_dgsq_manager import REQUEST_TYPE, ManagerBench, _bogus_grant, _traffic
from opengse.sim.runner import test_params
from opengse.sim.soak import soak_inputs


class NotOurs(int):
    """A field value the DUT receives as is but the closed-loop bench's shadow never
    matches (that bench applies a GRANT by its key alone; the type is checked here)."""

    def __eq__(self, other):
        return False

    __hash__ = int.__hash__


class GapLedger(dict):
    """``shadow.queues`` keeping the gap count of the queues the bench deletes."""

    def __init__(self):
        super().__init__()
        self.gone = 0

    def __delitem__(self, qid):
        self.gone += self[qid].gaps
        super().__delitem__(qid)

    def gaps(self):
        return self.gone + sum(q.gaps for q in self.values())


class SoakBench(ManagerBench):
    def __init__(self, dut, seed):
        super().__init__(dut, seed)
        self.shadow.queues = GapLedger()
        self.n_ctx = test_params()["n_ctx"]
        self.unknown = 0
        self.kinds = {}

    def live(self):
        return [qid for qid, q in self.shadow.queues.items() if q.backlog > 0 and qid in self.qkey]

    def bogus(self):
        """One bogus GRANT into the GRANT stream; returns whether it is an unknown one."""
        rng = self.rng
        live = self.live()
        r = rng.random()
        if r < 0.15 and live:
            # a live context's own key, the wrong type: the DUT must not apply it
            qid = rng.choice(live)
            dst, port = self.qkey[qid][:2]
            g = _bogus_grant(type=REQUEST_TYPE, src_node=NotOurs(dst), port=port, dgsq=qid)
            kind = "type"
        elif r < 0.15:
            g, kind = _bogus_grant(type=REQUEST_TYPE, dgsq=rng.randrange(self.n_ctx)), "type"
        elif r < 0.3:
            g, kind = _bogus_grant(dgsq=rng.randrange(self.n_ctx, 2 * self.n_ctx)), "beyond pool"
        elif r < 0.5 or not live:
            dgsq = rng.choice(live) if live else rng.randrange(self.n_ctx)
            g, kind = _bogus_grant(src_node=rng.randrange(8, 0x10000), dgsq=dgsq), "unknown src_node"
        elif r < 0.7:
            qid = rng.choice(live)
            dst, port = self.qkey[qid][:2]
            g = _bogus_grant(src_node=dst, port=(port + rng.randrange(1, 4)) % 4, dgsq=qid)
            kind = "wrong port"
        else:
            qid = rng.choice(live)
            dst, port = self.qkey[qid][:2]
            seq = (self.shadow.queues[qid].ack - rng.randrange(0, 100)) % 65536
            g = _bogus_grant(src_node=dst, port=port, dgsq=qid, seq=seq, len=rng.randrange(3))
            kind = "stale seq"
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.grants.append(g)
        return kind != "stale seq"


async def run_soak(dut, seed):
    tb = SoakBench(dut, seed)
    await tb.start()
    n = soak_inputs()
    _traffic(tb, 12, n, sizes=(64, 300, 1500))
    # Bogus GRANTs injected from the loop's hook every ~20 clocks while traffic lasts.
    state = {"unknown": 0}

    def inject(bench):
        if bench.pkts or bench.inflight_pkts:
            state["unknown"] += bench.bogus()
            bench.hooks.append((bench.now + bench.rng.randint(5, 35), inject))

    tb.hooks.append((100, inject))
    await tb.run(400 * n + 100_000, pause=0.2, until_done=True)
    assert tb.delivered == tb.offered, f"delivered {tb.delivered} of {tb.offered} bytes"
    idle = test_params()["idle_cycles"]
    await tb.run(3 * idle + 4096)
    got = {k: tb.stat(k) for k in ("grant_unknown", "grant_gap", "alloc", "freed", "requests")}
    want = {
        "grant_unknown": state["unknown"],
        "grant_gap": tb.shadow.queues.gaps(),
        "alloc": got["alloc"],
        "freed": got["alloc"],
        "requests": tb.requests,
    }
    dut._log.info("manager soak: %d packets, bogus GRANTs %s, counters %s", n, tb.kinds, got)
    assert got == want, f"counters: got {got}, expected {want}"
    assert int(dut.ctx_used.value) == 0, f"{int(dut.ctx_used.value)} contexts held at the end"
    assert tb.wasted <= tb.kinds.get("stale seq", 0), f"{tb.wasted} grants found an empty queue"


@cocotb.test()
async def test_manager_soak(dut):
    await run_soak(dut, 1812)
