"""A component's signature around an ``Instance`` of its exported Verilog module.

:class:`BlackBox` has exactly the signature of the component it stands for, so a
composing top connects it with ``wiring.connect`` as it would the component, but its
``elaborate()`` is one ``Instance`` of the module that :func:`write_export` writes for
that component, with the brief's port names (``clk``, ``rst``, ``s_axis_host_0_tdata``
...). Four leaves of a fabric are then one Verilog module instantiated four times:
Verilator's hierarchical mode compiles it once.
"""

from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal
from amaranth.hdl._ir import PortDirection
from amaranth.lib import wiring

from opengse.platforms.export import port_map

__all__ = ["BlackBox"]


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
