"""Text helpers every layer may use: sentence splitting and token-overlap measures."""
