"""Layer 1, the data: ToolBench's registry and test queries, loaded once and cached (toolbench, registry, loaders)."""
