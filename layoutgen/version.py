"""layoutgen's version: one constant, read by the renderer's stamps, the compile cache's key and the CLI."""

__version__ = "0.1.0"
