"""The wire below the server: stdio pipes served from the event loop, the handshake cache that answers the
opening requests while the SDK imports, and request cancellation (a client gone writes nothing)."""
