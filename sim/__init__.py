"""OpenGSE simulation: reference models, scapy GSE layer, cocotb/pyuvm harness."""
