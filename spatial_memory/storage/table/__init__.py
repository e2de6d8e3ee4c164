"""Storage's table: the memories table itself: opening it, its schema, reading rows, keeping it
compact."""
