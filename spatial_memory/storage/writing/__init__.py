"""Storage's writing: changing the table: the lock, one commit retried, writes, expiry, imports in
flight."""
