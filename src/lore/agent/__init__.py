"""Deep mode and query intelligence: decomposition, rewriting, the LangGraph loop (`lore.agent.graph`)."""
