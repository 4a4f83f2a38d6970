"""Scenarios: config folders, FAQ fast path, scopes, routing, prompt profiles and retrieval plans."""
