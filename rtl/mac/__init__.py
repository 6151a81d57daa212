"""RGMII 1 Gb/s Ethernet MAC: RGMII DDR I/O, framing, FCS, clock-domain crossings."""
