"""The `lore` command line (Typer + Rich)."""
