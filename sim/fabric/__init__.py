"""The L x S leaf-spine fabric in one Verilator model (issue 14 items 6, 9-11).

* :mod:`.top` - :class:`~.top.FabricTop`, the Amaranth composition: leaves, spines,
  links, one traffic generator and one checker per host.
* :mod:`.harness` - the top's run-time interface: one configuration write port and
  every counter as a port.
* :mod:`.blackbox` - a component's signature around an ``Instance`` of its exported
  module (a leaf is compiled once, instantiated L times).
* :mod:`.runner` - export, Verilate (cached per shape and mode), run the C++ main.
* :mod:`.config` - what the C++ main is told at run time.
* :mod:`.overhead` - the overhead limit a perfect scheduler could reach.
* :mod:`.report` - table, JSON and PNG.
"""
