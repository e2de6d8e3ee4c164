"""Storage's search: finding memories: by vector, by keyword, recall's candidates, the exact
copy."""
