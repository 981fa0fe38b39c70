"""Generic TIR passes (one module each). Import the pass modules directly; this file stays empty."""
