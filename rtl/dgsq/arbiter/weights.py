"""The grant arbiter's weight table: one 8-bit round-robin weight per tenant entry."""

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .records import cfg_layout

__all__ = ["WeightTable"]


class WeightTable(wiring.Component):
    """Weights of ``n_tenants`` tenant entries (a power of two), default 1.

    Interface:

    * ``s_cfg`` (:func:`~.records.cfg_layout`): weight writes, always ready; weight 0
      is stored as 1. A write takes effect in the next clock.
    * ``g_tenant`` -> ``g_weight``, ``g_weight_is_1``: the grant lane's lookup of the
      entry ``tenant % n_tenants`` (combinational). ``g_weight_is_1`` comes from a
      flip-flop per entry kept alongside the weights.
    * ``e_tenant`` -> ``e_weight``: the engine lane's lookup (combinational).
    """

    def __init__(self, n_tenants):
        self.n_tenants = n_tenants
        self.tid_bits = max(1, (n_tenants - 1).bit_length())
        super().__init__(
            {
                "s_cfg": In(stream.Signature(cfg_layout(self.tid_bits))),
                "g_tenant": In(12),
                "g_weight": Out(8),
                "g_weight_is_1": Out(1),
                "e_tenant": In(12),
                "e_weight": Out(8),
            }
        )

    def elaborate(self, platform):
        m = Module()
        weights = Array(Signal(8, init=1, name=f"weight{t}") for t in range(self.n_tenants))
        m.d.comb += self.s_cfg.ready.eq(1)
        # (``wone``: whether each weight is 1, kept alongside so that the grant lane reads
        # it from one flip-flop per tenant.)
        wone = Signal(self.n_tenants, init=(1 << self.n_tenants) - 1)
        cfg = self.s_cfg.payload
        with m.If(self.s_cfg.valid):
            m.d.sync += [
                weights[cfg.tenant].eq(Mux(cfg.weight == 0, 1, cfg.weight)),
                wone.bit_select(cfg.tenant, 1).eq(cfg.weight <= 1),
            ]

        def weight_of(tenant):
            return weights[tenant[: self.tid_bits]] if self.n_tenants > 1 else weights[0]

        def weight_is_1(tenant):
            return wone.bit_select(tenant[: self.tid_bits], 1) if self.n_tenants > 1 else wone[0]

        m.d.comb += [
            self.g_weight.eq(weight_of(self.g_tenant)),
            self.g_weight_is_1.eq(weight_is_1(self.g_tenant)),
            self.e_weight.eq(weight_of(self.e_tenant)),
        ]
        return m
