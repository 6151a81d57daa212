"""The grant arbiter's key CAM: the (``src_node``, ``dgsq``) key of every slot."""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["KeyCAM"]


class KeyCAM(wiring.Component):
    """Keys of ``n`` slots in flip-flops, compared with one key at once.

    * Write: when ``wr_en``, slot ``wr_oh`` (one-hot) takes key (``wr_src``,
      ``wr_dgsq``) at the next clock edge.
    * Compare (combinational): ``lo[i]``: slot i's ``src_node`` equals ``key[:16]``;
      ``hi[i]``: its ``dgsq`` equals ``key[16:]`` and it is live (``valid[i]``). The
      caller registers them and ANDs the halves a clock later (a 32-bit compare per slot
      is too deep for one clock behind the key's fanout to 64 slots). The upper half of
      the slots compares with ``~key_n``, an inverted copy of the key in flip-flops of
      its own (half the fanout each).
    """

    def __init__(self, n):
        self.n = n
        super().__init__(
            {
                "wr_en": In(1),
                "wr_oh": In(n),
                "wr_src": In(16),
                "wr_dgsq": In(16),
                "key": In(32),
                "key_n": In(32),
                "valid": In(n),
                "lo": Out(n),
                "hi": Out(n),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.n
        ksrc = [Signal(16, name=f"ksrc{i}") for i in range(n)]
        kdgsq = [Signal(16, name=f"kdgsq{i}") for i in range(n)]
        for i in range(n):
            with m.If(self.wr_en & self.wr_oh[i]):
                m.d.sync += [ksrc[i].eq(self.wr_src), kdgsq[i].eq(self.wr_dgsq)]
        nh = n // 2

        def key_of(i):
            return self.key if i < nh else ~self.key_n

        m.d.comb += [
            self.lo.eq(Cat(ksrc[i] == key_of(i)[:16] for i in range(n))),
            self.hi.eq(Cat(kdgsq[i] == key_of(i)[16:] for i in range(n)) & self.valid),
        ]
        return m
