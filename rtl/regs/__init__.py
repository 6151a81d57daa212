"""The register map: one description (:mod:`.description`) of every block's
configuration and counters, and the AXI4-Lite bank built from it (:mod:`.bank`).
See docs/register-map.md."""
