"""Text helpers every layer may use: sentence splitting, token-overlap measures, text units, stable ids,
the one normaliser."""
