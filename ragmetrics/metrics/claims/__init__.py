"""The claim metrics: the claim engine (extract, verify), its response schemas, and one file per metric."""
