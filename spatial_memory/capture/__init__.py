"""Capture: memories stored from the client's hooks, without the model having to ask.

A hook is a new process at every client event (`spatial-memory hook <event>`, hook.py). It reads
the client's JSON on stdin (payloads.py), keeps what is worth remembering from the tool use or the
transcript since the last capture (selection.py, transcript.py, reusing text/extraction.py; its
running state per session in session_state.py), redacts secrets (text/secrets.py) and appends the
records (records.py) to a spool beside the store (spool.py), then exits: it never opens the store
or loads the model for a tool use, so it stays fast. A running server ingests the spool within a
second (ingest.py, store.py); with no server running (presence.py), a detached
`spatial-memory ingest` does, or the next server. SessionStart (and UserPromptSubmit where the
client takes context) answers with context read from the store (context.py), asked of a running
server when there is one (context_server.py). Namespaces follow the project (namespace.py);
setup.py shows and writes the clients' configuration.

Only stdlib and this package are imported on the hook's fast path (see hook.py).
"""
