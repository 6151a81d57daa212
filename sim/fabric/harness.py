"""The run-time interface of a simulation top: one configuration write port, every
counter as a port.

A top composed of units (leaves, spines, links, generators, checkers) connects their
datapaths itself and hands the rest to a :class:`Harness`:

* every *input* member of a unit that the top does not drive (a plain port such as a
  generator's ``frame_bytes``, or an always-ready write stream such as a spine's
  ``s_route``) gets an address on the top's write port ``cfg_valid / cfg_addr /
  cfg_data`` (32-bit words, one write per clock). A plain port is driven by a register
  that keeps the port's reset value until written; a member wider than 32 bits takes
  consecutive words, least significant first. A stream member takes its payload in the
  same way and is offered (``valid``) when its last word is written, held until
  ``ready``; a write that arrives while the previous one is still offered is lost and
  counted in ``o_cfg_lost``;
* every *output* member that the top does not use (counters ``stat_*``, status such
  as a monitor's ``healthy`` set) becomes a top output ``o_<unit>_<member>``, up to
  64 bits (wider members are cut into 32-bit ports ``..._w<k>``).

:meth:`Harness.address_map` lists both, for the run configuration
(:mod:`opengse.sim.fabric.config`) and the C++ main (which reads the outputs every
K clocks). Nothing here touches a unit's datapath: the top still owns every stream it
connects.
"""

from dataclasses import asdict, dataclass

from amaranth.hdl import Cat, Shape, Signal, Value
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

__all__ = ["Harness", "ConfigItem", "StatItem", "ADDR_BITS"]

ADDR_BITS = 16
WORD = 32


@dataclass
class ConfigItem:
    """An input of a unit written through ``cfg_*``: ``name`` is ``unit.member``
    (``unit.member_k`` for element k of an array member)."""

    name: str
    kind: str  # "reg" or "stream"
    width: int
    addr: int
    words: int
    init: int = 0


@dataclass
class StatItem:
    """An output of a unit seen as the top's port ``port``."""

    name: str  # unit.member
    port: str
    width: int


def _elements(obj, name, member):
    if member.dimensions:
        assert len(member.dimensions) == 1, f"{name}: only one-dimensional arrays"
        return [(f"{name}_{k}", obj[k]) for k in range(member.dimensions[0])]
    return [(name, obj)]


class Harness:
    """Configuration and counter ports for ``units``: ``[(unit_name, component,
    handled)]``, ``handled`` the member names the top connects itself."""

    def __init__(self, units):
        self.units = units
        self.config, self.stats = [], []
        self._regs, self._streams, self._outs = [], [], []
        addr = 0
        for unit, comp, handled in units:
            for name, member in comp.signature.members.items():
                if name in handled:
                    continue
                for elem, value in _elements(getattr(comp, name), name, member):
                    full = f"{unit}.{elem}"
                    if member.flow == In and member.is_port:
                        width = Shape.cast(member.shape).width
                        words = max(1, -(-width // WORD))
                        self.config.append(ConfigItem(full, "reg", width, addr, words, int(member.init or 0)))
                        self._regs.append((self.config[-1], value))
                        addr += words
                    elif member.flow == In and isinstance(member.signature, stream.Signature):
                        width = Shape.cast(member.signature.members["payload"].shape).width
                        words = max(1, -(-width // WORD))
                        self.config.append(ConfigItem(full, "stream", width, addr, words))
                        self._streams.append((self.config[-1], value))
                        addr += words
                    elif member.flow == Out and member.is_port:
                        width = Shape.cast(member.shape).width
                        if width <= 64:
                            self.stats.append(StatItem(full, f"o_{unit}_{elem}", width))
                            self._outs.append((self.stats[-1], value, 0))
                        else:
                            for k in range(-(-width // WORD)):
                                w = min(WORD, width - k * WORD)
                                self.stats.append(StatItem(f"{full}[{k}]", f"o_{unit}_{elem}_w{k}", w))
                                self._outs.append((self.stats[-1], value, k * WORD))
                    else:
                        raise ValueError(
                            f"{full}: the top must connect this member itself "
                            "(an output stream, or an interface that is not a stream)"
                        )
        if addr >= 1 << ADDR_BITS:
            raise ValueError(f"{addr} configuration words do not fit {ADDR_BITS} address bits")
        self.stats.append(StatItem("harness.cfg_lost", "o_cfg_lost", 32))

    def members(self):
        """Signature members for the top: ``cfg_*`` inputs and the counter outputs."""
        out = {"cfg_valid": In(1), "cfg_addr": In(ADDR_BITS), "cfg_data": In(WORD)}
        for s in self.stats:
            out[s.port] = Out(s.width)
        return out

    def address_map(self):
        return {"config": [asdict(c) for c in self.config], "stats": [asdict(s) for s in self.stats]}

    def elaborate(self, m, top):
        """Drive the units' inputs from ``top.cfg_*`` and ``top``'s outputs from them."""
        wr, addr, wdata = top.cfg_valid, top.cfg_addr, top.cfg_data
        for item, value in self._regs:
            reg = Signal(item.width, init=item.init, name=f"cfg_{item.name.replace('.', '_')}")
            m.d.comb += Value.cast(value).eq(reg)
            for k in range(item.words):
                w = min(WORD, item.width - k * WORD)
                with m.If(wr & (addr == item.addr + k)):
                    m.d.sync += reg[k * WORD : k * WORD + w].eq(wdata[:w])
        lost = Signal(32)
        m.d.comb += top.o_cfg_lost.eq(lost)
        lost_inc = []
        for item, st in self._streams:
            stage = Signal(max(1, (item.words - 1) * WORD), name=f"cfg_{item.name.replace('.', '_')}_stage")
            payload = Signal(item.width, name=f"cfg_{item.name.replace('.', '_')}_payload")
            valid = Signal(name=f"cfg_{item.name.replace('.', '_')}_valid")
            m.d.comb += [st.valid.eq(valid), st.payload.eq(payload)]
            with m.If(st.ready):
                m.d.sync += valid.eq(0)
            for k in range(item.words - 1):
                with m.If(wr & (addr == item.addr + k)):
                    m.d.sync += stage[k * WORD : (k + 1) * WORD].eq(wdata)
            hit = Signal(name=f"cfg_{item.name.replace('.', '_')}_hit")
            m.d.comb += hit.eq(wr & (addr == item.addr + item.words - 1))
            with m.If(hit):
                full = Cat(stage[: (item.words - 1) * WORD], wdata) if item.words > 1 else wdata
                m.d.sync += [payload.eq(full[: item.width]), valid.eq(1)]
            lost_inc.append(hit & valid & ~st.ready)
        if lost_inc:
            with m.If(Cat(*lost_inc).any()):
                m.d.sync += lost.eq(lost + 1)
        for item, value, lo in self._outs:
            m.d.comb += getattr(top, item.port).eq(Value.cast(value)[lo : lo + item.width])
