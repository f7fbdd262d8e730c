//! Spent-output data: bcoin .undo, Floresta .spent.json, Bitcoin Core undo records.
