"""Built-in configuration files (weak predictor diagrams), installed as ``seraph.configs``."""
