"""Unit tests of the pure cores: fold, context surgery, SSE, wire, validation, the run log."""
