"""AXI4LiteRegisterBank: the registers of a :class:`~.description.RegisterMap` behind one
AXI4-Lite slave port."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.bits import mux_tree, or_all
from .counter_store import CounterStore, counter_bits
from .description import WORD_BYTES, Access

__all__ = ["AXI4LiteRegisterBank", "port_name", "RESP_OKAY", "RESP_SLVERR", "RESP_DECERR"]

RESP_OKAY = 0b00
RESP_SLVERR = 0b10  # the address is mapped but refuses the access (write to RO)
RESP_DECERR = 0b11  # nothing is mapped at the address

# Address bits each read stage multiplexes on: 8 words in the first (its inputs are the
# live values, some of them sums or table reads in their blocks), 16 groups after.
_FIRST_SEL_BITS, _SEL_BITS = 3, 4


def port_name(block, register):
    """The bank's port for ``block.register``: ``<block>_<register>``."""
    return f"{block.name}_{register.name}"


def _member(flow, reg, init=0):
    m = flow(unsigned(reg.width), init=init)
    return m.array(reg.count) if reg.count > 1 else m


def _elems(port, reg):
    return list(port) if reg.count > 1 else [port]


class AXI4LiteRegisterBank(wiring.Component):
    """Every register of ``regmap``, read and written through one AXI4-Lite port.

    Parameters:

    * ``regmap``: the :class:`~.description.RegisterMap`.
    * ``addr_width``: bits of ``s_axil_awaddr``/``s_axil_araddr`` (default: the map's
      :attr:`~.description.RegisterMap.addr_width`). Every address bit is decoded: an
      address above the map is unmapped.
    * ``counters``: ``{port name: largest advance per clock}`` of 32-bit RO counters to
      keep in a :class:`~.counter_store.CounterStore` (one block RAM) instead of the
      read multiplexers: the bank reads only the low :attr:`counter_bits` of their ports
      (so Yosys trims the blocks' counters to those bits) and returns the whole 32-bit
      value, exact, from the store. Each must count up from 0 at reset by at most its
      advance per clock. A read of one waits for the store's scan to visit it: its
      response comes 4 to ``max(n, 4) + 6`` clocks after the AR handshake (``n``
      stored counters).

    Bus side (32-bit data, no ``awprot``/``arprot``): ``s_axil_awaddr, awvalid, awready,
    wdata, wstrb, wvalid, wready, bresp, bvalid, bready, araddr, arvalid, arready, rdata,
    rresp, rvalid, rready``. Registers are 32-bit words; address bits 1:0 are not
    decoded (an access names a word, ``wstrb`` its bytes, as AXI4-Lite has it).

    Register side, for register ``r`` of block ``b`` (port ``b_r``, an array of
    ``count`` when the register has several elements):

    * ``RO``: ``In(width)``, the value the block drives (a ``const`` register has no
      port: the bank returns its reset value);
    * ``RW``: ``Out(width)``, from its reset value; with ``strobe``, also ``b_r_written``
      (``Out(1)``), high for the one clock in which a write took effect;
    * ``W1C``: ``In(width)`` event bits and ``b_r_sticky`` (``Out(width)``), the sticky
      bits the host reads and clears by writing 1 (an event in the clock of the
      clearing write wins).

    Responses: OKAY; SLVERR for a write to an RO register (nothing changes); DECERR for a
    read or write of an unmapped address (a read returns 0, a write changes nothing).
    ``wstrb`` selects the bytes a write changes (a W1C write clears only in strobed
    bytes).

    Wide registers (more than 32 bits, ``ceil(width / 32)`` words, low word first):

    * reading word 0 snapshots the other words in the same clock; reading word ``k > 0``
      returns the snapshot. Read the low word first and the whole value is from one
      clock, whatever carries happen between the reads;
    * writing words below the top one stages them; writing the top word commits the
      whole value in one clock (staged words written before, if any, else the words last
      committed).

    Timing: AW and W are each registered at their handshake (``awready``/``wready`` low
    while one is held); the clock after the AW handshake looks the response up from the
    held address; in the clock after that, once W is held and no response is pending,
    the write takes effect and ``bvalid`` rises (registered). So a write whose AW and W
    arrive together is answered three clocks later. A read's address is registered at
    its AR handshake and held until its response has gone; the read then goes through
    registered stages: a clock after the handshake every word registers its own select
    (a decode of the held address), then an AND-OR of each aligned group of 8 words with
    their selects (it samples the live values), then 16-to-1 multiplexers on four
    address bits each, the last registering ``rdata`` and ``rresp`` with ``rvalid``. So
    ``rvalid`` rises ``3 + ceil((addr_width - 5) / 4)`` clocks after the AR handshake:
    five for a map of 2 to 8 KB (the leaf's 1344 bytes take 11 address bits). ``arready`` is low from the
    AR handshake until the R handshake. One write and one read are in flight at a time;
    the two channels are independent.
    """

    def __init__(self, regmap, addr_width=None, counters=None):
        self.regmap = regmap
        self.addr_width = regmap.addr_width if addr_width is None else addr_width
        if (1 << self.addr_width) < regmap.size:
            raise ValueError(f"addr_width {self.addr_width} cannot reach the map's {regmap.size:#x} bytes")
        aw = self.addr_width
        self._stored, self.counter_bits = self._stored_counters(counters or {})
        members = {
            "s_axil_awaddr": In(aw),
            "s_axil_awvalid": In(1),
            "s_axil_awready": Out(1),
            "s_axil_wdata": In(32),
            "s_axil_wstrb": In(4),
            "s_axil_wvalid": In(1),
            "s_axil_wready": Out(1),
            "s_axil_bresp": Out(2),
            "s_axil_bvalid": Out(1),
            "s_axil_bready": In(1),
            "s_axil_araddr": In(aw),
            "s_axil_arvalid": In(1),
            "s_axil_arready": Out(1),
            "s_axil_rdata": Out(32),
            "s_axil_rresp": Out(2),
            "s_axil_rvalid": Out(1),
            "s_axil_rready": In(1),
        }
        for blk, reg in regmap.registers():
            name = port_name(blk, reg)
            if name in members:
                raise ValueError(f"register port {name!r} collides with another port")
            if reg.access == Access.RO and not reg.const:
                members[name] = _member(In, reg)
            elif reg.access == Access.RW:
                members[name] = _member(Out, reg, reg.reset)
                if reg.strobe:
                    members[f"{name}_written"] = Out(1).array(reg.count) if reg.count > 1 else Out(1)
            elif reg.access == Access.W1C:
                members[name] = _member(In, reg)
                members[f"{name}_sticky"] = _member(Out, reg)
        super().__init__(members)

    def _stored_counters(self, counters):
        """``[(word index, block, register, element)]`` of the counters kept in a
        :class:`~.counter_store.CounterStore`, and its low bits per counter."""
        regs = {port_name(blk, reg): (blk, reg) for blk, reg in self.regmap.registers()}
        stored = []
        for name, step in counters.items():
            if name not in regs:
                raise ValueError(f"counters: {name!r} is no register port of the map")
            blk, reg = regs[name]
            if reg.access != Access.RO or reg.const or reg.width != 32:
                raise ValueError(f"counters: {name!r} is not a 32-bit RO register driven by a block")
            if not isinstance(step, int) or step < 1:
                raise ValueError(f"counters: {name!r}: the largest advance per clock must be >= 1")
            base = self.regmap.address(blk.name, reg.name)
            for i in range(reg.count):
                stored.append(((base + i * reg.stride) // WORD_BYTES, blk, reg, i))
        if not stored:
            return [], None
        return stored, counter_bits(len(stored), max(counters.values()))

    def elements(self, block, register):
        """The ports of register ``register`` (a name) of block ``block`` (a name), as a
        list of ``count`` elements: a register of count 1 is a plain port, not an array
        of one (indexing it would pick a bit)."""
        blk = self.regmap[block]
        reg = blk[register]
        return _elems(getattr(self, port_name(blk, reg)), reg)

    # ---- helpers ------------------------------------------------------------------------
    def _value(self, blk, reg, i):
        """What a read of element ``i`` returns (the live value)."""
        if reg.access == Access.RO and reg.const:
            return C(reg.reset, reg.width)
        if reg.access == Access.W1C:
            return _elems(getattr(self, f"{port_name(blk, reg)}_sticky"), reg)[i]
        return _elems(getattr(self, port_name(blk, reg)), reg)[i]

    def elaborate(self, platform):
        m = Module()
        snapshots = {}
        for blk, reg in self.regmap.registers():
            if reg.words > 1:
                for i in range(reg.count):
                    snapshots[(blk.name, reg.name, i)] = Signal(
                        reg.width - 32, name=f"{port_name(blk, reg)}_{i}_snap"
                    )
        staging = {}
        for blk, reg in self.regmap.registers():
            if reg.access == Access.RW and reg.words > 1:
                low = 32 * (reg.words - 1)
                for i in range(reg.count):
                    staging[(blk.name, reg.name, i)] = Signal(
                        low, name=f"{port_name(blk, reg)}_{i}_stage", init=reg.reset & ((1 << low) - 1)
                    )
        store = None
        if self._stored:
            m.submodules.counters = store = CounterStore([w for w, *_ in self._stored], self.counter_bits)
            for k, (_w, blk, reg, i) in enumerate(self._stored):
                m.d.comb += store.count[k].eq(self._value(blk, reg, i)[: self.counter_bits])
        self._write_side(m, staging)
        self._read_side(m, snapshots, store)
        return m

    def _write_side(self, m, staging):
        aw_full = Signal()
        aw_addr = Signal(self.addr_width - 2)  # word address
        w_full = Signal()
        w_data = Signal(32)
        w_strb = Signal(4)
        bvalid = self.s_axil_bvalid
        m.d.comb += [self.s_axil_awready.eq(~aw_full), self.s_axil_wready.eq(~w_full)]
        with m.If(self.s_axil_awvalid & self.s_axil_awready):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(self.s_axil_awaddr[2:])]
        with m.If(self.s_axil_wvalid & self.s_axil_wready):
            m.d.sync += [w_full.eq(1), w_data.eq(self.s_axil_wdata), w_strb.eq(self.s_axil_wstrb)]
        with m.If(bvalid & self.s_axil_bready):
            m.d.sync += bvalid.eq(0)

        # The response is looked up from the held address in the clock after the AW
        # handshake (aw_dec), a tree on the address bits instead of a decode of every
        # word into bresp (8 LUT levels); the write waits for it.
        aw_dec = Signal()
        aw_resp = Signal(2)
        resp = {}
        for addr, (blk, reg, i, w) in self.regmap.words().items():
            resp[addr // WORD_BYTES] = C(RESP_SLVERR if reg.access == Access.RO else RESP_OKAY, 2)
        m.d.sync += aw_resp.eq(mux_tree(resp, aw_addr, 2, RESP_DECERR))
        do_write = Signal()
        m.d.comb += do_write.eq(aw_dec & w_full & ~bvalid)
        m.d.sync += aw_dec.eq(aw_full & ~do_write)
        bmask = Cat(*(b.replicate(8) for b in w_strb))
        word_sel = aw_addr

        # Sticky W1C bits collect events every clock; a clearing write is below.
        clears = {}
        for blk, reg in self.regmap.registers():
            name = port_name(blk, reg)
            if reg.access == Access.W1C:
                for i in range(reg.count):
                    sticky = _elems(getattr(self, f"{name}_sticky"), reg)[i]
                    event = _elems(getattr(self, name), reg)[i]
                    clr = Signal(reg.width, name=f"{name}_{i}_clr")
                    clears[(blk.name, reg.name, i)] = clr
                    m.d.sync += sticky.eq((sticky & ~clr) | event)
            if reg.strobe:
                for i in range(reg.count):
                    m.d.sync += _elems(getattr(self, f"{name}_written"), reg)[i].eq(0)

        with m.If(do_write):
            m.d.sync += [bvalid.eq(1), aw_full.eq(0), w_full.eq(0), self.s_axil_bresp.eq(aw_resp)]
            with m.Switch(word_sel):
                for addr, (blk, reg, i, w) in self.regmap.words().items():
                    with m.Case(addr // WORD_BYTES):
                        if reg.access == Access.RO:
                            continue
                        if reg.access == Access.W1C:
                            m.d.comb += clears[(blk.name, reg.name, i)].eq((w_data & bmask)[: reg.width])
                        else:
                            self._write_rw(m, blk, reg, i, w, w_data, bmask, staging)

    def _write_rw(self, m, blk, reg, i, w, w_data, bmask, staging):
        name = port_name(blk, reg)
        value = _elems(getattr(self, name), reg)[i]
        key = (blk.name, reg.name, i)
        lo, hi = 32 * w, min(32 * (w + 1), reg.width)
        if w < reg.words - 1:  # a low word of a wide register: stage it
            stage = staging[key]
            m.d.sync += stage[lo:hi].eq((stage[lo:hi] & ~bmask) | (w_data & bmask))
            return
        merged = (value[lo:hi] & ~bmask[: hi - lo]) | (w_data & bmask)[: hi - lo]
        if reg.words > 1:
            m.d.sync += value.eq(Cat(staging[key], merged))
        else:
            m.d.sync += value.eq(merged)
        if reg.strobe:
            m.d.sync += _elems(getattr(self, f"{name}_written"), reg)[i].eq(1)

    def _read_side(self, m, snapshots, store):
        # The AR handshake registers the word address, which then stays put until the
        # response has gone (arready is low meanwhile). A clock later every mapped word
        # registers its own select (a decode of the held address: one flip-flop per
        # word, each a different function, so the placer puts it beside its word's
        # multiplexer; the one address register drove every leaf multiplexer across
        # the chip, and their outputs crossed it again to stage 1 in the same clock:
        # 10.8 ns on the ECPIX-5 leaf). Stage 1 is then an AND-OR of every aligned group
        # of 8 words with their selects (sampling the live values, and the high words
        # of the wide register addressed, in one clock); each later stage is a
        # registered multiplexer picking one of 16 groups on address bits of its own,
        # the last registering rdata and rresp with rvalid. Unmapped words are
        # constant 0 with a 0 ``mapped`` bit, which rides along (a group with no
        # select set gives the same).
        abits = self.addr_width - 2
        ar_addr = Signal(abits)  # word address
        busy = Signal()  # a read is in flight, from AR to R handshake
        rvalid = self.s_axil_rvalid
        splits = [0, min(abits, _FIRST_SEL_BITS)]
        while splits[-1] < abits:
            splits.append(min(abits, splits[-1] + _SEL_BITS))
        n_stages = len(splits) - 1
        # token[0]: the selects register; token[k]: stage k registers, in this clock
        token = Signal(n_stages + 1)
        m.d.comb += self.s_axil_arready.eq(~busy)
        m.d.sync += token.eq(token << 1)
        with m.If(self.s_axil_arvalid & self.s_axil_arready):
            m.d.sync += [busy.eq(1), token[0].eq(1), ar_addr.eq(self.s_axil_araddr[2:])]
        with m.If(rvalid & self.s_axil_rready):
            m.d.sync += [rvalid.eq(0), busy.eq(0)]

        # Stored counters: a registered decode of the held address; the store's read
        # starts a clock later and its answer bypasses the multiplexers.
        stored = {w for w, *_ in self._stored}
        st_hit = Signal()
        if store is not None:
            m.d.comb += [store.rd_en.eq(token[1] & st_hit), store.rd_addr.eq(ar_addr)]
            with m.Switch(ar_addr):
                with m.Case(*sorted(stored)):
                    m.d.sync += st_hit.eq(1)
                with m.Default():
                    m.d.sync += st_hit.eq(0)

        # Leaves: 32 data bits and the mapped bit of every mapped word, and its select.
        level, hit = {}, {}
        for addr, (blk, reg, i, w) in self.regmap.words().items():
            index = addr // WORD_BYTES
            if index in stored:
                continue
            hit[index] = Signal(name=f"rd_hit_{index}")
            m.d.sync += hit[index].eq(ar_addr == index)
            if w == 0:
                value = self._value(blk, reg, i)[:32]
                if reg.words > 1:  # reading the low word snapshots the others
                    snap = snapshots[(blk.name, reg.name, i)]
                    with m.If(token[1] & hit[index]):
                        m.d.sync += snap.eq(self._value(blk, reg, i)[32:])
            else:
                value = snapshots[(blk.name, reg.name, i)][32 * (w - 1) : 32 * w]
            level[index] = Cat(value, C(0, 32 - len(value)), C(1, 1))

        n = splits[1]
        groups = {}
        for index, value in level.items():
            groups.setdefault(index >> n, []).append(Mux(hit[index], value, 0))
        if n_stages == 1:  # a map of one group: its AND-OR is the last stage
            last = or_all(groups.get(0, []), 33)
        level = {}
        for g, terms in groups.items():
            reg = level[g] = Signal(33, name=f"rd_s1_{g}")
            m.d.sync += reg.eq(or_all(terms, 33))
        for stage in range(1, n_stages):
            sel = ar_addr[splits[stage] : splits[stage + 1]]
            n = len(sel)
            groups = {}
            for index, value in level.items():
                groups.setdefault(index >> n, {})[index & ((1 << n) - 1)] = value
            if stage == n_stages - 1:
                break
            level = {}
            for g, members in groups.items():
                reg = level[g] = Signal(33, name=f"rd_s{stage + 1}_{g}")
                m.d.sync += reg.eq(mux_tree(members, sel, 33))
        if n_stages > 1:
            last = Signal(33)
            m.d.comb += last.eq(mux_tree(groups.get(0, {}), sel, 33))
        with m.If(token[n_stages] & ~st_hit):
            m.d.sync += [
                rvalid.eq(1),
                self.s_axil_rdata.eq(last[:32]),
                self.s_axil_rresp.eq(Mux(last[32], RESP_OKAY, RESP_DECERR)),
            ]
        if store is not None:
            st_wait = Signal()  # a stored counter's read waits for the store's answer
            with m.If(token[1] & st_hit):
                m.d.sync += st_wait.eq(1)
            with m.If(st_wait & store.rd_valid):
                m.d.sync += [
                    st_wait.eq(0),
                    rvalid.eq(1),
                    self.s_axil_rdata.eq(store.rd_data),
                    self.s_axil_rresp.eq(RESP_OKAY),
                ]
