"""Board platforms and top levels."""
