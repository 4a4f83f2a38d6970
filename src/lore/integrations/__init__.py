"""Lore where its users already work: MCP tools, LangChain and LlamaIndex retrievers."""
