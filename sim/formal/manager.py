"""DGSQ manager: the context pool is never exceeded, and no release goes out without
credit.

Configuration (:data:`PARAMS`): 2 contexts, 2 tenants, 1-unit (64-byte) containers,
refresh 4 and idle 8 clocks (coarse clock = every clock). Packets, GRANTs (any
``type``, ``dgsq``, ``len``), release reports, ``node_id`` and every ``ready`` are free;
``rst`` low after reset. The wrapper counts, per context id, the GRANTs taken for it
(``type`` GRANT) and the releases sent, and asserts every clock:

* ``ctx_used`` <= the pool, and every ``m_pkt``/``m_rel``/``m_req`` names a context of
  the pool;
* a release (``m_rel``) only for a context that received more GRANTs than it sent
  releases (one GRANT forms one container), and with ``credit`` > 0.
"""

from amaranth.hdl import Array, Assert, Assume, Cover, Elaboratable, Module, Mux, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach

__all__ = ["ManagerCredit", "PARAMS"]

PARAMS = dict(n_ctx=2, refresh_cycles=4, idle_cycles=8, container_bytes=64, ttl=64, tick_shift=0, n_tenants=2)
GRANT = 2


class ManagerCredit(Elaboratable):
    def __init__(self, cover=False, **params):
        from opengse.rtl.dgsq.manager import DGSQManager

        self.cover = cover
        self.dut = DGSQManager(**{**PARAMS, **params})

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        n = dut.n_ctx
        m.d.comb += Assume(~ResetSignal())
        m.d.comb += Assert(dut.ctx_used <= n, "more contexts in use than the pool")
        for s, what in ((dut.m_pkt, "packet"), (dut.m_rel, "release")):
            with m.If(s.valid):
                m.d.comb += Assert(s.payload.queue < n, f"{what} names a context outside the pool")
        with m.If(dut.m_req.valid):
            m.d.comb += Assert(dut.m_req.payload.dgsq < n, "REQUEST names a context outside the pool")
        # credit per context: GRANTs taken minus releases sent
        bits = 4
        credit = Array(Signal(bits, name=f"grants_open{q}") for q in range(n))
        g, r = dut.s_grant, dut.m_rel
        g_take = g.valid & g.ready & (g.payload.type == GRANT)
        r_take = r.valid & r.ready
        with m.If(r.valid):
            m.d.comb += [
                Assert(credit[r.payload.queue] != 0, "release without a GRANT for it"),
                Assert(r.payload.credit != 0, "release of zero credit"),
            ]
        for q in range(n):
            inc = g_take & (g.payload.dgsq == q)
            dec = r_take & (r.payload.queue == q)
            top = (1 << bits) - 1
            m.d.sync += credit[q].eq(credit[q] + Mux(inc & (credit[q] != top), 1, 0) - Mux(dec, 1, 0))
        if self.cover:
            m.d.comb += [Cover(r.valid, "a release"), Cover(dut.ctx_used == n, "the pool full")]
        return m


def _build(cover=False):
    top = ManagerCredit(cover=cover)
    return top, inputs_of(top.dut)


POOL = register(
    Property(
        name="manager_pool_and_credit",
        block="dgsq_manager",
        asserts="ctx_used <= pool, outputs name pool contexts only; a release only for a context "
        "with more GRANTs taken than releases sent, never of zero credit (2 contexts, 1-unit "
        "containers)",
        assumptions="rst low after reset; packets, GRANTs (any type, dgsq, len), release "
        "reports, node_id and every ready free",
        mode="bmc",
        depth=16,
        build=_build,
        options={"engine": "smtbmc yices", "script": ("flatten", "memory_map")},
        fast=False,
        bounded_why="the context memory's balance fields are not inductive relative to the "
        "wrapper's GRANT count; depth 16 covers packet -> REQUEST -> GRANT -> release (3 "
        "clocks per event; the cover check reaches a release and a full pool); each step past "
        "16 costs about twice the one before (step 19 alone: 3 minutes)",
    )
)
register_reach(POOL, "a release goes out, and the pool fills")
