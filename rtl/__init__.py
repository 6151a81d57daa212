"""OpenGSE gateware: Amaranth components of the GSE v1 switch datapath."""
