"""Procedural memory: how a task is done, as a memory of type `procedure` (model.py), and served
to clients as an MCP skill (skill_file.py). Pure: no store, no model."""
