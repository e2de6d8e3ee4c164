"""Text rules, pure standard library: what is worth remembering in a text (extraction, over the
sentence segmenter in sentences.py and the rule table in rules.py), the details that tell
look-alike statements apart (details, for consolidate), and the secrets no stored text may hold
(secrets)."""
