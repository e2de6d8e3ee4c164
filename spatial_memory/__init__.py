"""spatial-memory-mcp: persistent memory for LLMs as a navigable vector space."""

import os

# No telemetry: onnxruntime writes a device id and queues telemetry events under
# ~/.cache/Microsoft/DeveloperTools when its library loads, before any call could turn that off
# (onnxruntime.disable_telemetry_events() after the import is too late); this variable, read at
# load, is the switch. Set here, in the package every process of ours imports first (the server,
# hooks, ingest, backfill, the atlas), and inherited by the graph builder child.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

__version__ = "0.1.0"
