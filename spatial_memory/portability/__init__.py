"""Files in and out: export/import formats (Parquet, JSON, CSV; ours or the reference's) and the
path checks that keep them inside the allowed directories."""
