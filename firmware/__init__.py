"""Control plane: register map and host tools (the gse command line)."""
