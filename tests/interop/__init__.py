"""The TypeScript interop layer's plumbing: pinned npm packages (package.json, package-lock.json),
the SDK client driver (driver.mjs) and its Python side (node.py)."""
