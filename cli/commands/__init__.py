"""One module per obs command."""
