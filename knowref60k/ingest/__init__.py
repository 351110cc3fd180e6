"""Reading dumps: line chunks, formats, quarantine, slices and the ledger of seen dumps."""
