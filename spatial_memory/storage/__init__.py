"""Everything that talks to LanceDB: the memories table (store.py and its parts), the exact
in-memory copy, the access ledger, indexes, filters (typed values, never pasted text) and the
maintenance the server's upkeep thread (runtime/upkeep.py) runs."""
