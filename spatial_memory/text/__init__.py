"""Text rules, pure standard library: what is worth remembering in a text (extraction), the details
that tell look-alike statements apart (details, for consolidate), and map renderings (Mermaid, SVG)."""
