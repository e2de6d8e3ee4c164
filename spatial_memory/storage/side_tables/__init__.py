"""Storage's side tables: the small tables beside the memories: links, versions, access counts."""
