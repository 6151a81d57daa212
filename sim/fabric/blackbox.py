"""A component's signature around an ``Instance`` of its exported Verilog module.

:class:`BlackBox` has exactly the signature of the component it stands for, so a
composing top connects it with ``wiring.connect`` as it would the component, but its
``elaborate()`` is one ``Instance`` of the module that :func:`write_export` writes for
that component, with the brief's port names (``clk``, ``rst``, ``s_axis_host_0_tdata``
...). Four leaves of a fabric are then one Verilog module instantiated four times:
Verilator's hierarchical mode compiles it once.
"""

from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal, Shape
from amaranth.hdl._ir import PortDirection
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In

from opengse.platforms.export import port_map

__all__ = ["BlackBox", "PlainStreams"]


class BlackBox(wiring.Component):
    """Stands for ``component`` (a ``wiring.Component``) as an instance of ``module``.

    ``component`` itself is not elaborated here; export it separately under the name
    ``module`` (:func:`opengse.platforms.export.write_export`)."""

    def __init__(self, component, module):
        self.module = module
        self.component = component
        super().__init__(component.signature)

    def elaborate(self, platform):
        m = Module()
        ports = {"i_clk": ClockSignal("sync"), "i_rst": ResetSignal("sync")}
        for name, (value, direction) in port_map(self)[0].items():
            ports[("i_" if direction == PortDirection.Input else "o_") + name] = value
        m.submodules.inst = Instance(self.module, **ports)
        return m


def _clashes(member):
    """An input stream whose struct payload has a field named ``valid`` or ``ready``:
    exported, the field's port ``<name>_valid`` would be the handshake's name too."""
    if member.flow != In or not member.is_signature or not isinstance(member.signature, stream.Signature):
        return False
    shape = member.signature.members["payload"].shape
    return isinstance(shape, data.StructLayout) and any(n in ("valid", "ready") for n, _ in shape)


class PlainStreams(wiring.Component):
    """``component`` with each input stream whose payload has a ``valid`` or ``ready``
    field (a leaf's destination-table writes ``s_dest``: ``{index, valid, mac, ...}``)
    turned into a stream of the payload's bits, so that its exported ports
    (``s_dest``, ``s_dest_valid``, ``s_dest_ready``) do not collide. Everything else
    passes through unchanged. For simulation exports only."""

    def __init__(self, component):
        self.inner = component
        members = {}
        self._plain = set()
        for name, member in component.signature.members.items():
            if _clashes(member):
                width = Shape.cast(member.signature.members["payload"].shape).width
                members[name] = (
                    In(stream.Signature(width)).array(*member.dimensions)
                    if member.dimensions
                    else In(stream.Signature(width))
                )
                self._plain.add(name)
            else:
                members[name] = member
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        for name, member in self.signature.members.items():
            outer, core = getattr(self, name), getattr(inner, name)
            pairs = list(zip(outer, core)) if member.dimensions else [(outer, core)]
            for o, c in pairs:
                if name in self._plain:
                    m.d.comb += [c.valid.eq(o.valid), c.payload.eq(o.payload), o.ready.eq(c.ready)]
                elif member.is_signature:
                    if member.flow == In:
                        wiring.connect(m, wiring.flipped(o), c)
                    else:
                        wiring.connect(m, c, wiring.flipped(o))
                elif member.flow == In:
                    m.d.comb += c.eq(o)
                else:
                    m.d.comb += o.eq(c)
        return m
