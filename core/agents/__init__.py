"""Layer 3, the agents: who writes PtR's stubs and who plans, an LLM (llm/) or the offline heuristic."""
