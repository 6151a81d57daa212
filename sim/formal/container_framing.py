"""Container framing in its context: ``m_meta`` keeps the stream rule and every
descriptor gets the destination of the release it belongs to.

With every input free (sim/formal/stream_blocks.py, ``container_framing_stream_rules``)
``m_meta_valid`` can fall while ``m_meta_ready`` is low: a descriptor of the head
release's queue is on offer, then the head's report says it sent no packet, so the head
is skipped and the descriptor is compared with the next release. That input order needs
a descriptor of a queue whose only outstanding release is empty, which its neighbours
never produce:

* the VOQ buffer (rtl/voq/walker.py) pushes a packet record (``m_desc``) only for a
  packet it sends, with the queue of the release being walked, releases in order; an
  empty release pushes none and reports ``pkts`` = 0, any other reports its count;
* the DGSQ manager (rtl/dgsq/manager/context_write.py, ``rel_pending``) has at most one
  release of a queue out, and issues the next only after the report of the previous
  one, which passes through this block (``s_done`` -> ``m_done``) first.

So a descriptor of queue q on offer belongs to the one outstanding release of q, which
is therefore not empty: the skip the free-input counterexample takes cannot happen,
and the block is left as it is (the finding is a property of the context, not a bug).

The wrapper (:class:`FramingInContext`, ``queue_bits`` 2, ``credit_bits`` 4, ``depth``
2) keeps the releases it let through in order (queue, ``dst_node``, whether the release
will be empty: a free input read at the release, and whether its last descriptor has
been taken) and assumes the neighbours' order:

* a release of a queue is offered only while no release of that queue is outstanding
  (taken at ``s_rel``, its report not yet passed ``s_done``) (the manager);
* reports come in release order, each naming its release's queue, ``pkts`` = 0 exactly
  for the empty ones, a non-empty one only after its last descriptor was taken (the
  VOQ reports after the release's last beat has left; that the sprayer took every
  descriptor by then is the leaf's wiring, assumed here, not checked);
* a descriptor is offered only for the oldest outstanding release that is neither
  empty nor finished, with that release's queue (the VOQ).

Asserted: ``m_meta``, ``m_deq`` and ``m_done`` follow the valid/ready rule; a
descriptor on ``m_meta`` carries the ``dst_node`` and queue of the release it belongs
to; the wrapper never tracks more releases than the block lets out. With
``manager_rule=False`` (two releases of a queue out at once) the withdrawal comes back
(tests/formal/test_formal_refuted.py).
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach
from .stream_blocks import assert_stream_rules
from .streams import assume_stream_rules

__all__ = ["FramingInContext", "PARAMS"]

PARAMS = dict(queue_bits=2, credit_bits=4, depth=2)


class FramingInContext(Elaboratable):
    def __init__(self, cover=False, manager_rule=True):
        from opengse.rtl.dgsq.container_framing import ContainerFraming

        self.dut = ContainerFraming(**PARAMS)
        self.cover, self.manager_rule = cover, manager_rule
        self.will_be_empty = Signal()  # free: is the release taken now an empty one?

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        rel, deq, done, mdone = dut.s_rel, dut.m_deq, dut.s_done, dut.m_done
        desc, meta = dut.s_desc, dut.m_meta
        m.d.comb += Assume(~ResetSignal())
        for port, name in ((rel, "s_rel"), (done, "s_done"), (desc, "s_desc")):
            assume_stream_rules(m, port, name)

        n = PARAMS["depth"]
        qb = PARAMS["queue_bits"]
        v = [Signal(name=f"rel{i}_out") for i in range(n)]
        q = [Signal(qb, name=f"rel{i}_queue") for i in range(n)]
        dst = [Signal(len(rel.payload.dst_node), name=f"rel{i}_dst") for i in range(n)]
        empty = [Signal(name=f"rel{i}_empty") for i in range(n)]
        ended = [Signal(name=f"rel{i}_ended") for i in range(n)]

        # the release whose descriptors come now: the oldest neither empty nor ended
        cur = [Signal(name=f"rel{i}_cur") for i in range(n)]
        before = 0
        for i in range(n):
            here = v[i] & ~empty[i] & ~ended[i]
            m.d.comb += cur[i].eq(here & ~before)
            before = before | here
        have_cur = Signal()
        cur_q = Signal(qb)
        cur_dst = Signal(len(dst[0]))
        m.d.comb += have_cur.eq(before)
        for i in range(n):
            with m.If(cur[i]):
                m.d.comb += [cur_q.eq(q[i]), cur_dst.eq(dst[i])]

        # the manager: one release of a queue out at a time
        if self.manager_rule:
            with m.If(rel.valid):
                for i in range(n):
                    m.d.comb += Assume(~(v[i] & (q[i] == rel.payload.queue)))
        # the VOQ: reports in release order, pkts = 0 exactly for the empty ones
        with m.If(done.valid):
            m.d.comb += [
                Assume(v[0]),
                Assume(done.payload.queue == q[0]),
                Assume((done.payload.pkts == 0) == empty[0]),
                Assume(empty[0] | ended[0]),
            ]
        # the VOQ: descriptors of the current release only
        with m.If(desc.valid):
            m.d.comb += [Assume(have_cur), Assume(desc.payload.queue == cur_q)]

        rel_fire = rel.valid & rel.ready
        rep_fire = done.valid & done.ready
        desc_end = desc.valid & desc.ready & desc.payload.last
        # bookkeeping: pop the oldest at its report, mark the current one ended at its
        # last descriptor, push at a release (after the pop)
        nv, nq, nd, ne, nx = list(v), list(q), list(dst), list(empty), list(ended)
        nx = [nx[i] | (desc_end & cur[i]) for i in range(n)]
        shifted = [tuple(lst[i + 1] if i + 1 < n else 0 for i in range(n)) for lst in (nv, nq, nd, ne, nx)]
        with m.If(rep_fire):
            for i in range(n):
                m.d.sync += [
                    v[i].eq(shifted[0][i]),
                    q[i].eq(shifted[1][i]),
                    dst[i].eq(shifted[2][i]),
                    empty[i].eq(shifted[3][i]),
                    ended[i].eq(shifted[4][i]),
                ]
        with m.Else():
            for i in range(n):
                m.d.sync += ended[i].eq(nx[i])
        count = Signal(range(n + 1))
        m.d.comb += count.eq(sum(v) - rep_fire)
        with m.If(rel_fire):
            m.d.comb += Assert(count < n, "more releases out than the wrapper tracks")
            for i in range(n):
                with m.If(count == i):
                    m.d.sync += [
                        v[i].eq(1),
                        q[i].eq(rel.payload.queue),
                        dst[i].eq(rel.payload.dst_node),
                        empty[i].eq(self.will_be_empty),
                        ended[i].eq(0),
                    ]

        with m.If(meta.valid):
            m.d.comb += [
                Assert(meta.payload.dst_node == cur_dst, "m_meta: dst_node of another release"),
                Assert(meta.payload.dgsq == cur_q, "m_meta: dgsq of another release"),
                Assert(meta.payload.last == desc.payload.last, "m_meta: last moved"),
            ]
        assert_stream_rules(m, meta, "m_meta")
        assert_stream_rules(m, deq, "m_deq")
        assert_stream_rules(m, mdone, "m_done")
        if self.cover:
            m.d.comb += Cover(meta.valid & meta.ready & (dut.stat_empty_releases != 0) & ~meta.payload.last)
        return m


def _build(cover=False):
    top = FramingInContext(cover=cover)
    return top, inputs_of(top.dut) + [top.will_be_empty]


_WHY = (
    "k-induction does not close (tried k = 5): the wrapper's list of outstanding releases and the "
    "block's FIFO (entries, three pointers) are two copies of one state, and nothing at the ports ties "
    "them in an unreachable start; depth 10 passes releases, empty ones skipped, descriptors and "
    "reports through the 2-entry FIFO (the cover check reaches its event at step 3)"
)

IN_CONTEXT = register(
    Property(
        name="container_framing_meta_in_context",
        block="container_framing",
        asserts="m_meta, m_deq and m_done: once valid, valid and payload held until ready; each "
        "descriptor carries the dst_node and queue of the release it belongs to (queue_bits 2, "
        "credit_bits 4, depth 2)",
        assumptions="rst low after reset; inputs follow the valid/ready rule; the neighbours' order: "
        "one release of a queue out at a time (manager), reports in release order with pkts = 0 exactly "
        "for empty releases and after the last descriptor of the others, descriptors only of the oldest "
        "release neither empty nor finished (VOQ); contents, which releases are empty, every ready free",
        mode="bmc",
        depth=10,
        build=_build,
        options={"engine": "smtbmc yices"},
        bounded_why=_WHY,
    )
)
DEEP = register(
    Property(
        name="container_framing_meta_in_context_deep",
        block="container_framing",
        asserts=IN_CONTEXT.asserts + "; deeper: several full rounds of the 2-entry FIFO",
        assumptions=IN_CONTEXT.assumptions,
        mode="bmc",
        depth=14,
        build=_build,
        options={"engine": "smtbmc yices"},
        fast=False,
        bounded_why=_WHY,
    )
)
register_reach(IN_CONTEXT, "a descriptor leaves, not a container's last, after an empty release was skipped")
