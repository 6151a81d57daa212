"""Register blocks derived from a block's signature, and the wiring that joins the two.

A block's plain ports (not its streams) are its counters, status and configuration:

* every ``stat_<name>`` output is an RO counter ``<name>``, of the port's width, an
  array of ``count`` registers when the port is an array;
* every other output is an RO status register of the same name;
* every input is an RW configuration register of the same name (reset value from
  ``resets``, else 0),

except the ports listed in ``wired``: inputs another block drives inside a top (a
link's state, an egress FIFO's room) and outputs that go to another block. Every
plain port must be described (``docs``) or wired, and every description must name a
port, so a port added to a block, or renamed, fails the description instead of
silently missing from the map.
"""

from amaranth.hdl import Shape
from amaranth.lib import wiring

from .bank import port_name
from .description import Access, Register, RegisterBlock

__all__ = ["plain_ports", "registers_from_signature", "register_block", "connect_registers"]


def plain_ports(component):
    """``{name: (flow, width, count)}`` of the component's plain (non-interface) ports."""
    out = {}
    for name, member in component.signature.members.items():
        if member.is_signature:
            continue
        dims = member.dimensions
        if len(dims) > 1:
            raise ValueError(f"{name}: only one-dimensional port arrays map to registers")
        width = Shape.cast(member.shape).width
        out[name] = (member.flow, width, dims[0] if dims else 1)
    return out


def _reg_name(port):
    return port[len("stat_") :] if port.startswith("stat_") else port


def registers_from_signature(component, docs, *, resets=None, wired=(), extra=()):
    """The :class:`Register` list of ``component``: one per plain port not in ``wired``.

    ``docs`` maps each port name to its meaning; ``resets`` gives RW reset values by
    port name; ``extra`` are registers described by hand (after the derived ones).
    """
    resets = dict(resets or {})
    ports = plain_ports(component)
    unknown = (set(docs) | set(resets) | set(wired)) - set(ports)
    if unknown:
        raise ValueError(
            f"{type(component).__name__}: described ports it does not have: " + ", ".join(sorted(unknown))
        )
    regs = []
    for name, (flow, width, count) in ports.items():
        if name in wired:
            continue
        if name not in docs:
            raise ValueError(f"{type(component).__name__}: port {name!r} is neither described nor wired")
        if flow == wiring.Out:
            regs.append(Register(_reg_name(name), width, Access.RO, doc=docs[name], count=count))
        else:
            regs.append(
                Register(
                    _reg_name(name), width, Access.RW, reset=resets.pop(name, 0), doc=docs[name], count=count
                )
            )
    if resets:
        raise ValueError(f"reset values for outputs: {', '.join(resets)}")
    return regs + list(extra)


def connect_registers(m, bank, block, component, *, skip=()):
    """Join the bank's ports of ``block`` (a :class:`RegisterBlock`) with the same-named
    ports of ``component`` (``stat_<name>`` for counter ``<name>``): RO ports read from
    the component, RW ports drive it. Registers named in ``skip`` (hand-described ones
    with no port of that name) are left to the caller."""
    ports = plain_ports(component)
    for reg in block:
        if reg.name in skip or reg.const:
            continue
        src = f"stat_{reg.name}" if f"stat_{reg.name}" in ports else reg.name
        if src not in ports:
            raise ValueError(
                f"{block.name}.{reg.name}: {type(component).__name__} has no port "
                f"'stat_{reg.name}' or {reg.name!r} (pass it in skip= and connect it yourself)"
            )
        ours, theirs = getattr(bank, port_name(block, reg)), getattr(component, src)
        pairs = zip(ours, theirs) if reg.count > 1 else [(ours, theirs)]
        for a, b in pairs:
            if reg.access == Access.RW:
                m.d.comb += b.eq(a)
            else:
                m.d.comb += a.eq(b)


def register_block(name, component, docs, *, doc="", resets=None, wired=(), extra=()):
    """A :class:`RegisterBlock` named ``name`` for ``component`` (see
    :func:`registers_from_signature`)."""
    return RegisterBlock(
        name, registers_from_signature(component, docs, resets=resets, wired=wired, extra=extra), doc
    )
