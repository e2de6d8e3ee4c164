"""Storage's repair: a store mended or moved: checked, opened at its last good version, repaired,
re-embedded."""
