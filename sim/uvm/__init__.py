"""Reusable pyuvm environment for AXI-Stream blocks."""
