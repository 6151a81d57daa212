"""ContextCAM: the DGSQ manager's context pool, its key CAM and its allocator."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .layouts import key_layout

__all__ = ["ContextCAM"]


def _onehot_first(x):
    return x & (-x).as_unsigned()[: len(x)]


def _encode(onehot, bits):
    return Cat(Cat(onehot[i] for i in range(len(onehot)) if (i >> b) & 1).any() for b in range(bits))


class ContextCAM(wiring.Component):
    """Which context a packet's key has, or which one it gets; the pool's live set.

    Interface: ``key`` (the key of the packet on offer, the ``s_pkt`` payload) and
    ``offered`` (``s_pkt`` valid and not taken this clock) in; ``hit`` (the key has a
    live context ``q``), ``new`` (it has none and ``q`` is the lowest free one),
    ``q`` and ``current`` (``hit``/``new``/``q`` describe the packet on offer: take it
    only then) out; ``go`` = ``current & (hit | new)`` (from a register). ``accept``
    (the engine's ACCEPT clock) latches the free context the packet would get;
    ``alloc`` (CALC of a packet that took it) writes ``alloc_key`` into it and makes it
    live; ``free`` makes the contexts of one-hot ``free_oh`` free. ``valid`` is the live
    set (a bit per context), ``used`` how many are live.

    Timing: the CAM compare of ``key`` is registered, the candidate (hit: its context;
    else the lowest free one) registered once more, so ``hit``/``new``/``q`` describe
    the payload of two clocks ago: ``current`` requires the packet to have been offered
    (valid, not taken, so its payload held) for two clocks, also the first one after an
    idle clock. This is exact because the next packet is presented the clock after its
    predecessor was taken (ACCEPTs are >= 3 clocks apart). A key enters in CALC and a
    context is freed in the clock after a WRITE: ``current`` stays low until the
    candidate has seen that. Keys, ``valid`` and the compare are flip-flops (compared
    in parallel); no reset beyond ``valid`` = 0, ``used`` = 0.
    """

    def __init__(self, n_ctx):
        self.n_ctx = n_ctx
        qb = max(1, (n_ctx - 1).bit_length())
        super().__init__(
            {
                "key": In(key_layout()),
                "offered": In(1),
                "hit": Out(1),
                "new": Out(1),
                "q": Out(qb),
                "current": Out(1),
                "go": Out(1),
                "accept": In(1),
                "alloc": In(1),
                "alloc_key": In(key_layout()),
                "free": In(1),
                "free_oh": In(n_ctx),
                "valid": Out(n_ctx),
                "used": Out(qb + 1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.n_ctx
        qb = len(self.q)
        valid = self.valid
        k_dst = [Signal(16, name=f"k_dst{i}") for i in range(n)]
        k_port = [Signal(8, name=f"k_port{i}") for i in range(n)]
        k_tc = [Signal(3, name=f"k_tc{i}") for i in range(n)]
        k_ten = [Signal(12, name=f"k_ten{i}") for i in range(n)]

        pk = self.key
        match = Signal(n)
        free_oh = Signal(n)
        m.d.sync += [
            match.eq(
                Cat(
                    (k_dst[i] == pk.dst_node)
                    & (k_port[i] == pk.port)
                    & (k_tc[i] == pk.tc)
                    & (k_ten[i] == pk.tenant)
                    for i in range(n)
                )
            ),
            free_oh.eq(_onehot_first(~valid)),
        ]
        pk_free_oh = Signal(n)  # the context the packet gets, one-hot
        alloc_oh = Signal(n)  # the context allocated by the last ACCEPT, one-hot
        hit = (match & valid).any()
        m.d.sync += [
            self.hit.eq(hit),
            self.new.eq(~hit & free_oh.any()),
            self.q.eq(Mux(hit, _encode(match & valid, qb), _encode(free_oh, qb))),
            pk_free_oh.eq(free_oh),
        ]
        pk_seen = Signal(2)
        m.d.sync += pk_seen.eq(Cat(self.offered, pk_seen[0]))
        cam_hold = Signal(2)  # packets wait: a key entered or a context was freed
        m.d.sync += cam_hold.eq(Cat(self.free | self.alloc, cam_hold[0]))
        m.d.comb += self.current.eq(pk_seen.all() & ~self.free & ~cam_hold.any())
        # current & (hit | new), from a register: the same terms a clock ahead (the
        # free of this clock aside), so the engine's pick of the packet, and the context
        # memory's read address, see one flag instead of the CAM's pipeline
        go_r = Signal()
        m.d.sync += go_r.eq(
            self.offered & pk_seen[0] & ~(self.free | self.alloc) & ~cam_hold[0] & (hit | free_oh.any())
        )
        m.d.comb += self.go.eq(go_r & ~self.free)

        with m.If(self.accept):
            m.d.sync += alloc_oh.eq(pk_free_oh)
        with m.If(self.alloc):
            # The new key enters the CAM (the next packet is looked up with it).
            for i in range(n):
                with m.If(alloc_oh[i]):
                    m.d.sync += [
                        k_dst[i].eq(self.alloc_key.dst_node),
                        k_port[i].eq(self.alloc_key.port),
                        k_tc[i].eq(self.alloc_key.tc),
                        k_ten[i].eq(self.alloc_key.tenant),
                        valid[i].eq(1),
                    ]
            m.d.sync += self.used.eq(self.used + 1)
        with m.If(self.free):
            m.d.sync += [valid.eq(valid & ~self.free_oh), self.used.eq(self.used - 1)]
        return m
