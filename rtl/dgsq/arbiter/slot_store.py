"""The grant arbiter's slot store: one word per slot in two block-RAM banks with a
live-value table, so that two lanes each read-modify-write a slot every clock."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...lib.sram import VOQRam
from .bits import and_or

__all__ = ["SlotStore", "SlotReadSignature", "SlotWriteSignature"]


class SlotReadSignature(wiring.Signature):
    """A lane's read port, lane side: ``addr`` (slot index) and ``oh`` (the same slot,
    one-hot) in clock t; ``data``, the slot's latest word, in clock t+1."""

    def __init__(self, n, word_layout):
        super().__init__({"addr": Out(range(n)), "oh": Out(n), "data": In(word_layout)})


class SlotWriteSignature(wiring.Signature):
    """A lane's write port, lane side: when ``en``, ``data`` is written to slot ``addr``
    (``oh``: the same slot, one-hot)."""

    def __init__(self, n, word_layout):
        super().__init__({"en": Out(1), "addr": Out(range(n)), "oh": Out(n), "data": Out(word_layout)})


class SlotStore(wiring.Component):
    """Slot words of ``n`` slots for two lanes, G (grant) and E (engine).

    Bank G (``ram_g``, kept module ``gse_grant_slot_ram_g``) is written only by lane G,
    bank E (``ram_e``, ``gse_grant_slot_ram_e``) only by lane E; each bank has a read
    port per lane. ``lvt`` (one flip-flop per slot) says which bank holds a slot's
    latest word: a write by G sets it to G, a write by E to E (E wins when both write
    the same slot in one clock, which the arbiter never does).

    Interface (flipped :class:`SlotReadSignature` / :class:`SlotWriteSignature`):
    ``g_rd``, ``e_rd`` (read ports), ``g_wr``, ``e_wr`` (write ports).

    Timing: a read in clock t returns, in clock t+1, the word as written up to clock
    t-1 (a write in clock t is not seen: the banks are not transparent, and ``lvt``
    is sampled in clock t).
    """

    def __init__(self, n, word_layout):
        self.n, self.word_layout = n, word_layout
        super().__init__(
            {
                "g_rd": In(SlotReadSignature(n, word_layout)),
                "e_rd": In(SlotReadSignature(n, word_layout)),
                "g_wr": In(SlotWriteSignature(n, word_layout)),
                "e_wr": In(SlotWriteSignature(n, word_layout)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n, width = self.n, self.word_layout.size
        m.submodules.ram_g = ram_g = VOQRam(width, n, n_read=2)
        m.submodules.ram_e = ram_e = VOQRam(width, n, n_read=2)
        lvt = Signal(n)
        for ram, wr in ((ram_g, self.g_wr), (ram_e, self.e_wr)):
            m.d.comb += [ram.w_en.eq(wr.en), ram.w_addr.eq(wr.addr), ram.w_data.eq(wr.data)]
        # Read port 0 of each bank serves lane G, port 1 lane E.
        for port, rd in enumerate((self.g_rd, self.e_rd)):
            ra_g, rd_g = ram_g.read(port)
            ra_e, rd_e = ram_e.read(port)
            m.d.comb += [ra_g.eq(rd.addr), ra_e.eq(rd.addr)]
            in_e = Signal(name=f"r{port}_in_e")  # the word is in bank E
            m.d.sync += in_e.eq(and_or(rd.oh, lvt))
            m.d.comb += rd.data.eq(Mux(in_e, rd_e, rd_g))
        for i in range(n):
            with m.If(self.g_wr.en & self.g_wr.oh[i]):
                m.d.sync += lvt[i].eq(0)
            with m.If(self.e_wr.en & self.e_wr.oh[i]):
                m.d.sync += lvt[i].eq(1)
        return m
