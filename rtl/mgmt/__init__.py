"""In-band management: register reads and writes over Ethernet frames and over a UART,
through one AXI4-Lite master (docs/management.md)."""
