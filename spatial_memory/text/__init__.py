"""Text rules, pure standard library: what is worth remembering in a text (extraction), the details
that tell look-alike statements apart (details, for consolidate), map renderings (Mermaid, SVG),
and the secrets no stored text may hold (secrets)."""
